/*
Copyright 2026 The Conveyor Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package converter

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// tableRow is a row like the PostgreSQL connectors' (six columns: integers,
// text, an optional decimal, a timestamp, an optional text) with its key.
func tableRow(id int64) (ks *data.Schema, k *data.Struct, vs *data.Schema, v *data.Struct) {
	ks = data.StructOf("bench.Key", data.F("id", data.Int64Schema))
	vs = data.StructOf("bench.Value", data.F("id", data.Int64Schema), data.F("name", data.StringSchema),
		data.F("qty", data.Int32Schema), data.F("price", data.DecimalSchema(2).AsOptional()),
		data.F("at", data.TimestampSchema()), data.F("note", data.OptionalStringSchema))
	k = data.NewStruct(ks).Put("id", id)
	v = data.NewStruct(vs).Put("id", id).Put("name", "name-of-row-12345").Put("qty", int32(id%1000)).
		Put("price", data.NewDecimal(123456, 2)).Put("at", time.UnixMilli(1_700_000_000_000+id).UTC())
	if id%2 == 0 {
		v.Put("note", "a note about this row")
	}
	return ks, k, vs, v
}

func BenchmarkJSONTableRowFrom(b *testing.B) {
	c, _ := NewJSON(nil)
	_, _, vs, v := tableRow(42)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.FromConnectData("t", vs, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendConnectData serialises a table row's key and value (each
// with its own converter, as a task has) into one reused buffer, as the
// source runner does with its arena.
func BenchmarkAppendConnectData(b *testing.B) {
	kc, _ := NewJSON(nil)
	vc, _ := NewJSON(nil)
	ks, k, vs, v := tableRow(42)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, _, err = kc.AppendConnectData(buf[:0], "t", ks, k); err != nil {
			b.Fatal(err)
		}
		if buf, _, err = vc.AppendConnectData(buf, "t", vs, v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONTableRowTo(b *testing.B) {
	c, _ := NewJSON(nil)
	_, _, vs, v := tableRow(42)
	raw, err := c.FromConnectData("t", vs, v)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.ToConnectData("t", raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONTableKeyTo(b *testing.B) {
	c, _ := NewJSON(nil)
	ks, k, _, _ := tableRow(42)
	raw, err := c.FromConnectData("t", ks, k)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.ToConnectData("t", raw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestJSONFastPathAgrees decodes envelopes with a converter that knows
// their schema (the fast path) and with a fresh one (the general path,
// which parses the schema first): values and errors must agree, for
// well-formed records and for every kind of oddity the fast path must
// hand over.
func TestJSONFastPathAgrees(t *testing.T) {
	enc := mustJSON(t, nil)
	es := everythingSchema()
	ev := everythingValue(es)
	ks, k, vs, v := tableRow(7)
	_, _, _, v2 := tableRow(8)
	var inputs [][]byte
	for _, in := range []struct {
		s *data.Schema
		v any
	}{{es, ev}, {ks, k}, {vs, v}, {vs, v2}} {
		raw, err := enc.FromConnectData("t", in.s, in.v)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, raw)
	}
	rowSchema, err := enc.FromConnectData("t", vs, v)
	if err != nil {
		t.Fatal(err)
	}
	sj := string(rowSchema[len(`{"schema":`):bytes.Index(rowSchema, []byte(`,"payload":`))])
	env := func(payload string) []byte { return []byte(`{"schema":` + sj + `,"payload":` + payload + `}`) }
	const at = `"at":1700000000007`
	for _, p := range []string{
		`{"id":1,"name":"n","qty":2,"price":"AeJA",` + at + `,"note":null}`, // all set
		`{"note":"x",` + at + `,"qty":2,"name":"n","id":1}`,                 // other order, price missing
		`{"id":1,"name":"n","qty":2,` + at + `,"id":3}`,                     // duplicate
		`{"id":1,"name":"n","qty":2,` + at + `,"extra":[1,{"a":2}]}`,        // unknown field
		`{"id":1,"name":"n","qty":2}`,                                       // required missing
		`{"id":1,"name":null,"qty":2,` + at + `}`,                           // required null
		`{"id":1.0,"name":"n","qty":2,` + at + `}`,                          // fraction
		`{"id":1e3,"name":"n","qty":2,` + at + `}`,                          // exponent
		`{"id":-0,"name":"n","qty":-2147483648,` + at + `}`,                 // edges
		`{"id":-5,"name":"n","qty":-7,"at":-3}`,                             // negatives
		`{"id":1,"name":"n","qty":2147483648,` + at + `}`,                   // int32 overflow
		`{"id":9223372036854775807,"name":"n","qty":2,` + at + `}`,          // int64 max
		`{"id":9223372036854775808,"name":"n","qty":2,` + at + `}`,          // int64 overflow
		`{"id":-1234567890123456789,"name":"n","qty":2,` + at + `}`,         // 19 digits
		`{"id":01,"name":"n","qty":2,` + at + `}`,                           // leading zero
		`{"id":+1,"name":"n","qty":2,` + at + `}`,                           // plus
		`{"id":1,"name":"a\"b\\c\u00e9\ud83d\ude00\/","qty":2,` + at + `}`,  // escapes
		`{"id":1,"name":"héllo wörld ✓","qty":2,` + at + `}`,                // UTF-8
		"{\"id\":1,\"name\":\"bad \xff utf8\",\"qty\":2," + at + `}`,        // invalid UTF-8
		"{\"id\":1,\"name\":\"tab\there\",\"qty\":2," + at + `}`,            // control character
		`{"id":1,"name":"n","qty":2,"price":"not base64!",` + at + `}`,      // bad base64
		`{"id":1,"name":"n","qty":2,"price":12.5,` + at + `}`,               // numeric decimal
		`{"id":1,"name":"n","qty":2,"price":"/////w==",` + at + `}`,         // negative decimal
		`{"id":1,"name":"n","qty":2,"price":"gAAAAAAAAAA=",` + at + `}`,     // int64 min
		`{"id":1,"name":"n","qty":2,"price":"AQIDBAUGBwgJ",` + at + `}`,     // 9 bytes: big.Int
		`{"id":1,"name":"n","qty":2,"price":"",` + at + `}`,                 // empty: zero
		`{"id":1,"name":"n","qty":2,"price":"AeJA",` + at + `}`,             // escaped base64
		`{"id":1,"name":"n","qty":2,"price":"AeJ",` + at + `}`,              // truncated base64
		`{"id":1,"name":"a long plain ASCII name over eight bytes","qty":2,` + at + `}`,
		`{"id":1,"name":"n","qty":2,` + at + `,}`,                // trailing comma
		`{"id":1,"name":"n","qty":2,` + at + ``,                  // unterminated
		` { "id" : 1 , "name" : "n" , "qty" : 2 , ` + at + ` } `, // whitespace
		`{"id":true,"name":"n","qty":2,` + at + `}`,              // wrong type
		`{"id":1,"name":5,"qty":2,` + at + `}`,                   // wrong type
		`[1,2]`, `null`, `"x"`, `{}`, ``,
	} {
		inputs = append(inputs, env(p))
	}
	inputs = append(inputs,
		[]byte(`{"schema":`+sj+`,"payload":{"id":1,"name":"n","qty":2,`+at+`}} x`),               // trailing data
		[]byte(`{"schema":`+sj+`,"payload":{"id":1,"name":"n","qty":2,`+at+`},"x":1}`),           // third key
		[]byte(`{"payload":{"id":1,"name":"n","qty":2,`+at+`},"schema":`+sj+`}`),                 // other order
		[]byte(`{"schema":`+sj+`,"schema":`+sj+`,"payload":{"id":1,"name":"n","qty":2,`+at+`}}`), // twice
		[]byte(" \n{\"schema\" :\t"+sj+" ,\r\"payload\": {\"id\":1,\"name\":\"n\",\"qty\":2,"+at+"} } \n"),
		[]byte(`{"schema":null,"payload":{"a":1}}`),
	)
	warm := mustJSON(t, nil)
	for _, raw := range inputs[:4] {
		if _, _, err := warm.ToConnectData("t", raw); err != nil {
			t.Fatal(err)
		}
	}
	fast := 0
	for i, raw := range inputs {
		ws, wv, werr := mustJSON(t, nil).ToConnectData("t", raw)
		if _, _, ok := warm.fastEnvelope(raw); ok {
			fast++
		}
		gs, gv, gerr := warm.ToConnectData("t", raw)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Fatalf("#%d %s: error %v, general path: %v", i, raw, gerr, werr)
		}
		if !gs.Equal(ws) || !data.ValuesEqual(gv, wv) {
			t.Fatalf("#%d %s: decoded %v %v, general path: %v %v", i, raw, gs, gv, ws, wv)
		}
	}
	if fast < 8 {
		t.Fatalf("the fast path took %d of %d inputs; the test no longer exercises it", fast, len(inputs))
	}
}

// TestJSONFastPathSchemaChange checks that a changed schema text is never
// decoded with the parse of the previous one.
func TestJSONFastPathSchemaChange(t *testing.T) {
	c := mustJSON(t, nil)
	s32 := data.StructOf("r", data.F("n", data.Int32Schema))
	s64 := data.StructOf("r", data.F("n", data.Int64Schema))
	sOpt := data.StructOf("r", data.F("n", data.OptionalInt64Schema))
	b32, _ := mustJSON(t, nil).FromConnectData("t", s32, data.NewStruct(s32).Put("n", int32(5)))
	b64, _ := mustJSON(t, nil).FromConnectData("t", s64, data.NewStruct(s64).Put("n", int64(6)))
	bOpt, _ := mustJSON(t, nil).FromConnectData("t", sOpt, data.NewStruct(sOpt))
	for round := 0; round < 3; round++ {
		for _, tc := range []struct {
			raw  []byte
			want any
			s    *data.Schema
		}{{b32, int32(5), s32}, {b64, int64(6), s64}, {b32, int32(5), s32}, {bOpt, nil, sOpt}, {bOpt, nil, sOpt}, {b64, int64(6), s64}} {
			s, v, err := c.ToConnectData("t", tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Equal(tc.s) || v.(*data.Struct).Get("n") != tc.want {
				t.Fatalf("round %d, %s: got %v %v", round, tc.raw, s, v)
			}
		}
	}
}

// TestJSONFastPathConcurrent decodes records of two schemas from several
// goroutines with one converter (as runners share it): every record gets
// its own schema and values (run with -race).
func TestJSONFastPathConcurrent(t *testing.T) {
	c := mustJSON(t, nil)
	ks, k, vs, v := tableRow(3)
	rawK, _ := c.FromConnectData("t", ks, k)
	rawV, _ := c.FromConnectData("t", vs, v)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				raw, want, wantSchema := rawK, any(k), ks
				if (i+g)%2 == 0 {
					raw, want, wantSchema = rawV, any(v), vs
				}
				s, got, err := c.ToConnectData("t", raw)
				if err != nil || !s.Equal(wantSchema) || !data.ValuesEqual(got, want) {
					errs <- fmt.Errorf("goroutine %d record %d: %v %v %v", g, i, s, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// One converter serialising records of alternating schemas (so the last
// rendering misses every time, and the bounded cache is cycled through)
// writes what fresh converters write.
func TestJSONRenderCacheAlternating(t *testing.T) {
	c := mustJSON(t, nil)
	ks, k, vs, v := tableRow(3)
	other := make([]*data.Schema, schemaCacheSize+2)
	for i := range other {
		other[i] = data.StructOf(fmt.Sprintf("s%d", i), data.F("n", data.Int32Schema))
	}
	for round := range 3 {
		for i, s := range []*data.Schema{ks, vs, ks, other[round], vs} {
			val := any(k)
			switch s {
			case vs:
				val = v
			case other[round]:
				val = data.NewStruct(s).Put("n", int32(i))
			}
			got, err := c.FromConnectData("t", s, val)
			if err != nil {
				t.Fatal(err)
			}
			want, err := mustJSON(t, nil).FromConnectData("t", s, val)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("round %d record %d: %s, want %s", round, i, got, want)
			}
		}
	}
	for _, s := range other {
		if _, err := c.FromConnectData("t", s, data.NewStruct(s).Put("n", int32(1))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.schemaJSON); n > schemaCacheSize {
		t.Fatalf("rendering cache holds %d schemas, bound %d", n, schemaCacheSize)
	}
}
