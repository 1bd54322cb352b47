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
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// slowText is what a sink writes without the text path: the value
// ToConnectData returns, rendered by enc; nil for a null value.
func slowText(c *JSON, enc data.JSONEncoder, raw []byte) (*data.Schema, []byte, error) {
	s, v, err := c.ToConnectData("t", raw)
	if err != nil || v == nil {
		return s, nil, err
	}
	out, err := enc.Append(nil, s, v)
	return s, out, err
}

// agree checks the text path against the general one on raw: when the
// text path takes it, the general path must give the same schema and
// exactly the same bytes. It reports whether the text path took it.
func agree(t *testing.T, c *JSON, enc data.JSONEncoder, raw []byte) bool {
	t.Helper()
	prefix := []byte("prefix|")
	out, s, ok := c.AppendJSONText(bytes.Clone(prefix), enc, "t", raw)
	if !ok {
		return false
	}
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("%q: the text path overwrote dst: %q", raw, out)
	}
	ws, want, err := slowText(c, enc, raw)
	if err != nil {
		t.Fatalf("%q: the text path wrote %q, the general path fails: %v", raw, out[len(prefix):], err)
	}
	if want == nil {
		t.Fatalf("%q: the text path wrote %q for a null value", raw, out[len(prefix):])
	}
	if got := out[len(prefix):]; !bytes.Equal(got, want) {
		t.Fatalf("%q:\n text path    %s\n general path %s", raw, got, want)
	}
	if s != ws {
		t.Fatalf("%q: schema %v, the general path's %v", raw, s, ws)
	}
	return true
}

// schemalessInputs are JSON values of every kind the text path must
// either write exactly as the general path or hand over.
var schemalessInputs = []string{
	`{"id":1,"name":"name-1","note":"note number 7","qty":1}`, // sorted, compact
	`{"qty":1,"id":1,"note":"n","name":"x"}`,                  // unsorted
	`{"b":{"d":1,"c":[{"z":1,"y":2}]},"a":[]}`,                // nested unsorted
	` { "a" : 1 , "b" : [ 1 , 2 ] } `,                         // whitespace
	`{"a":1,"a":2}`, `{"b":1,"a":2,"b":3}`,                    // duplicates
	`{"a\u0062":1}`, `{"\n":1}`, `{"é":1,"e":2}`, // escaped and non-ASCII keys
	`{"n":-0}`, `{"n":0}`, `{"n":-0.0}`, `{"n":1.0}`, `{"n":1.50}`, `{"n":1e2}`, `{"n":1E+2}`, `{"n":-1e-7}`,
	`{"n":123.45}`, `{"n":5.00}`, `{"n":9223372036854775807}`, `{"n":9223372036854775808}`, `{"n":-9223372036854775808}`,
	`{"n":123456789012345678}`, `{"n":1234567890123456789}`, `{"n":12345678901234567890123}`, `{"n":1e400}`, `{"n":-1e400}`,
	`{"n":1e-400}`, `{"n":0.1}`, `{"n":100000000000000000000}`, `{"n":1e21}`, `{"n":1e20}`, `{"n":0.000001}`, `{"n":1e-7}`,
	`{"n":01}`, `{"n":+1}`, `{"n":.5}`, `{"n":1.}`, `{"n":1e}`, `{"n":-}`, `{"n":NaN}`,
	`{"s":"a\"b\\c"}`, `{"s":"\u00e9\ud83d\ude00\/"}`, `{"s":"\ud800"}`, `{"s":"\b\f\n\r\t"}`, `{"s":"\u0001\u001f\u007f"}`,
	`{"s":"<>&"}`, `{"s":"\u003c"}`, "{\"s\":\"bad \xff utf8\"}", "{\"s\":\"tab\there\"}", "{\"s\":\"\u2028\"}",
	`{"s":"héllo wörld ✓ 😀"}`, `{"s":"a long plain ASCII string over eight bytes"}`,
	`{"t":true,"f":false,"z":null}`, `{"x":tru}`, `{"x":nul}`, `{"x":falsey}`,
	`[1,2,3]`, `[]`, `{}`, `[{}]`, `"text"`, `42`, `-1.5`, `true`, `null`, ` null `, ``, ` `,
	`{"a":1}x`, `{"a":1} {}`, `{"a":1,}`, `{"a":1`, `{"a" 1}`, `{a:1}`, `[1,]`, `[,1]`, `{"a":[1 2]}`, `{,}`,
	"\ufeff{\"a\":1}", `{"a":1}` + "\n",
}

func TestJSONTextSchemalessAgrees(t *testing.T) {
	c := mustJSON(t, map[string]string{KeySchemasEnable: "false"})
	fast := 0
	for _, enc := range []data.JSONEncoder{{}, {NumericDecimal: true}} {
		for _, in := range schemalessInputs {
			if agree(t, c, enc, []byte(in)) {
				fast++
			}
		}
		deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
		if agree(t, c, enc, []byte(deep)) {
			t.Fatalf("the text path took %d levels of nesting", 300)
		}
	}
	for _, in := range []string{schemalessInputs[0], schemalessInputs[1], schemalessInputs[2], `{"n":1.50}`, `{"s":"a\"b\\c"}`} {
		if !agree(t, c, data.JSONEncoder{}, []byte(in)) {
			t.Errorf("%s: the text path handed it over", in)
		}
	}
	if fast < 40 {
		t.Fatalf("the text path took %d inputs; the test no longer exercises it", fast)
	}
}

// TestJSONTextSchemalessRandom compares both paths on generated JSON:
// random trees (keys in any order, now and then repeated; every kind of
// number and string), formatted with random whitespace, some of them
// damaged by one byte.
func TestJSONTextSchemalessRandom(t *testing.T) {
	const damage = `{}[],:"\ 0-e.`
	c := mustJSON(t, map[string]string{KeySchemasEnable: "false"})
	rng := rand.New(rand.NewPCG(28, 1))
	fast, n := 0, 20000
	for range n {
		raw := genJSON(rng, nil, 0)
		if rng.IntN(10) == 0 && len(raw) > 0 {
			i := rng.IntN(len(raw))
			switch rng.IntN(3) {
			case 0:
				raw = append(raw[:i], raw[i+1:]...)
			case 1:
				raw[i] = damage[rng.IntN(len(damage))]
			default:
				raw = append(raw[:i], append([]byte{damage[rng.IntN(len(damage))]}, raw[i:]...)...)
			}
		}
		if agree(t, c, data.JSONEncoder{}, raw) {
			fast++
		}
	}
	if fast < n/4 {
		t.Fatalf("the text path took %d of %d generated values", fast, n)
	}
	t.Logf("the text path took %d of %d generated values", fast, n)
}

var (
	genKeys    = []string{"a", "b", "c", "id", "name", "qty", "é", "Z", "a\\u0062", "long_key_name_here"}
	genNumbers = []string{"0", "-0", "7", "-42", "1.5", "1.50", "2.0", "1e3", "1E-3", "-0.0", "9223372036854775807",
		"9223372036854775808", "123456789012345678901", "1e400", "3.141592653589793", "0.1", "1e21", "100"}
	genStrings = []string{`""`, `"x"`, `"plain text of some length"`, `"é✓😀"`, `"a\"b"`, `"\\"`, `"\n\t"`, `"\u00e9"`,
		`"\ud83d\ude00"`, `"\/"`, `"<&>"`, "\"\xff\"", `"\u0000"`}
)

// genJSON appends a random JSON value to b.
func genJSON(rng *rand.Rand, b []byte, depth int) []byte {
	ws := func() {
		if rng.IntN(8) == 0 {
			b = append(b, " \n\t\r"[rng.IntN(4)])
		}
	}
	ws()
	k := rng.IntN(10)
	if depth > 3 && k < 4 {
		k += 4
	}
	switch {
	case k < 3:
		b = append(b, '{')
		for i := range rng.IntN(5) {
			if i > 0 {
				b = append(b, ',')
			}
			ws()
			b = append(append(append(b, '"'), genKeys[rng.IntN(len(genKeys))]...), '"')
			ws()
			b = append(b, ':')
			b = genJSON(rng, b, depth+1)
		}
		ws()
		b = append(b, '}')
	case k < 4:
		b = append(b, '[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b = append(b, ',')
			}
			b = genJSON(rng, b, depth+1)
		}
		b = append(b, ']')
	case k < 6:
		b = append(b, genNumbers[rng.IntN(len(genNumbers))]...)
	case k < 7:
		b = strconv.AppendInt(b, rng.Int64N(1<<40)-1<<39, 10)
	case k < 9:
		b = append(b, genStrings[rng.IntN(len(genStrings))]...)
	default:
		b = append(b, []string{"true", "false", "null"}[rng.IntN(3)]...)
	}
	ws()
	return b
}

// TestJSONTextEnvelopeAgrees compares both paths on envelopes: every
// type (the decimal written both ways), rows, and payloads the text path
// must hand over.
func TestJSONTextEnvelopeAgrees(t *testing.T) {
	es := everythingSchema()
	// es without its maps, which the text path hands over.
	var fields []data.Field
	for _, f := range es.Fields {
		if f.Schema.Type != data.TypeMap {
			fields = append(fields, data.F(f.Name, f.Schema))
		}
	}
	nm := data.StructOf("com.example.NoMaps", fields...)
	nmv := data.NewStruct(nm)
	for _, f := range nm.Fields {
		nmv.Put(f.Name, everythingValue(es).Get(f.Name))
	}
	ks, k, vs, v := tableRow(7)
	_, _, _, v2 := tableRow(8)
	for _, format := range []string{"BASE64", "NUMERIC"} {
		c := mustJSON(t, map[string]string{KeyDecimalFormat: format})
		var inputs [][]byte
		for _, in := range []struct {
			s *data.Schema
			v any
		}{{nm, nmv}, {ks, k}, {vs, v}, {vs, v2}, {es, everythingValue(es)}} {
			raw, err := c.FromConnectData("t", in.s, in.v)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, raw)
		}
		row := inputs[2]
		sj := string(row[len(`{"schema":`):bytes.Index(row, []byte(`,"payload":`))])
		env := func(payload string) []byte { return []byte(`{"schema":` + sj + `,"payload":` + payload + `}`) }
		const at = `"at":1700000000007`
		for _, p := range []string{
			`{"id":1,"name":"n","qty":2,"price":"AeJA",` + at + `,"note":null}`,
			`{"id":1,"name":"n","qty":2,"price":12.5,` + at + `,"note":null}`,
			`{"id":1,"name":"n","qty":2,` + at + `}`,                            // optional fields missing
			`{"id":1,"qty":2,"name":"n",` + at + `}`,                            // other order
			`{"note":"x",` + at + `,"qty":2,"name":"n","id":1}`,                 // reversed
			`{"id":1,"name":"n","qty":2,` + at + `,"id":3}`,                     // duplicate
			`{"id":1,"name":"n","qty":2,` + at + `,"extra":1}`,                  // unknown field
			`{"id":1,"name":"n","qty":2}`,                                       // required missing
			`{"id":1,"name":null,"qty":2,` + at + `}`,                           // required null
			`{"id":1.0,"name":"n","qty":2,` + at + `}`,                          // fraction
			`{"id":-0,"name":"n","qty":-2147483648,` + at + `}`,                 // edges
			`{"id":1,"name":"n","qty":2147483648,` + at + `}`,                   // int32 overflow
			`{"id":9223372036854775808,"name":"n","qty":2,` + at + `}`,          // int64 overflow
			`{"id":-1234567890123456789,"name":"n","qty":2,` + at + `}`,         // 19 digits
			`{"id":1,"name":"a\"b\\c\u00e9\ud83d\ude00\/","qty":2,` + at + `}`,  // escapes
			"{\"id\":1,\"name\":\"bad \xff utf8\",\"qty\":2," + at + `}`,        // invalid UTF-8
			`{"id":1,"name":"n","qty":2,"price":"not base64!",` + at + `}`,      // bad base64
			`{"id":1,"name":"n","qty":2,"price":"/////w==",` + at + `}`,         // negative decimal
			`{"id":1,"name":"n","qty":2,"price":"AQIDBAUGBwgJ",` + at + `}`,     // 9 bytes: big.Int
			`{"id":1,"name":"n","qty":2,"price":"",` + at + `}`,                 // empty: zero
			` { "id" : 1 , "name" : "n" , "qty" : 2 , ` + at + ` } `,            // whitespace
			`{"id":true,"name":"n","qty":2,` + at + `}`,                         // wrong type
			`{"id":1,"name":"n","qty":2,` + at + `,}`, `{"id":1`, `null`, `[1]`, // broken
		} {
			inputs = append(inputs, env(p))
		}
		// The every-type payload (without maps) with each field in turn left out or
		// set to null (defaults, optional and required fields).
		evenv := inputs[0]
		head := evenv[:bytes.Index(evenv, []byte(`,"payload":`))+len(`,"payload":`)]
		_, ev, err := c.ToConnectData("t", evenv)
		if err != nil {
			t.Fatal(err)
		}
		fenc := data.JSONEncoder{NumericDecimal: format == "NUMERIC"}
		for skip := range nm.Fields {
			for _, null := range []bool{false, true} {
				b := append(bytes.Clone(head), '{')
				first := true
				for j, f := range nm.Fields {
					if j == skip && !null {
						continue
					}
					if !first {
						b = append(b, ',')
					}
					first = false
					b = append(data.AppendJSONString(b, f.Name), ':')
					if j == skip {
						b = append(b, "null"...)
					} else if b, err = fenc.Append(b, f.Schema, ev.(*data.Struct).Get(f.Name)); err != nil {
						t.Fatal(err)
					}
				}
				inputs = append(inputs, append(b, "}}"...))
			}
		}
		for _, raw := range inputs[:5] { // the general path parses the schemas first
			if _, _, err := c.ToConnectData("t", raw); err != nil {
				t.Fatal(err)
			}
		}
		fast := 0
		for _, enc := range []data.JSONEncoder{{}, {NumericDecimal: true}} {
			for _, raw := range inputs {
				if agree(t, c, enc, raw) {
					fast++
				}
			}
		}
		// The key, a row without its decimal and, with base64 decimals,
		// the every-type record are taken (numeric decimals and maps go
		// the general path).
		taken := [][]byte{inputs[1], env(`{"id":1,"name":"n","qty":2,` + at + `}`)}
		if format == "BASE64" {
			taken = append(taken, inputs[0], inputs[2])
		}
		for _, raw := range taken {
			if _, _, ok := c.AppendJSONText(nil, fenc, "t", raw); !ok {
				t.Errorf("decimal.format=%s: the text path handed over %s", format, raw)
			}
		}
		t.Logf("decimal.format=%s: the text path took %d of %d inputs", format, fast, 2*len(inputs))
		if fast < 15 {
			t.Fatalf("decimal.format=%s: the text path took %d inputs; the test no longer exercises it", format, fast)
		}
	}
}

// A value left as text goes back to Kafka (a dead letter queue) as the
// bytes it came as, as Kafka Connect sends the original record there.
func TestJSONTextWritesBackItsBytes(t *testing.T) {
	for _, cfg := range []map[string]string{nil, {KeySchemasEnable: "false"}} {
		c := mustJSON(t, cfg)
		raw := []byte(`{"b":1.50, "a":"x"}`)
		if cfg == nil {
			raw = []byte(`{"schema":{"type":"struct","fields":[{"type":"double","optional":false,"field":"b"}],"optional":false},"payload":{"b":1.50}}`)
		}
		s, _, err := c.ToConnectData("t", raw)
		if err != nil {
			t.Fatal(err)
		}
		text, ts, ok := c.AppendJSONText(nil, data.JSONEncoder{}, "t", raw)
		if !ok || ts != s {
			t.Fatalf("%s: the text path handed it over (%v) or gave schema %v", raw, ok, ts)
		}
		back, err := c.FromConnectData("t", s, data.JSONText{Text: text, Raw: raw})
		if err != nil || !bytes.Equal(back, raw) {
			t.Fatalf("%s written back as %s (%v)", raw, back, err)
		}
	}
}
