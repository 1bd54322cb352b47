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
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

func TestSimpleHeader(t *testing.T) {
	h := SimpleHeader{}
	st := data.StructOf("", data.F("a", data.Int32Schema))
	cases := []struct {
		schema *data.Schema
		v      any
		want   string
	}{
		{nil, "text", "text"},
		{nil, []byte{0xff, 0}, "\xff\x00"},
		{nil, int32(-5), "-5"},
		{nil, true, "true"},
		{nil, 0.5, "0.5"},
		{nil, time.UnixMilli(1234), "1234"},
		{st, data.NewStruct(st).Put("a", int32(1)), `{"a":1}`},
		{nil, map[string]any{"k": "v"}, `{"k":"v"}`},
	}
	for _, c := range cases {
		b, err := h.FromHeader("t", "k", c.schema, c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%v: %q %v", c.v, b, err)
		}
	}
	if b, err := h.FromHeader("t", "k", nil, nil); b != nil || err != nil {
		t.Fatal(b, err)
	}
	s, v, _ := h.ToHeader("t", "k", []byte("hé"))
	if !s.Equal(data.OptionalStringSchema) || v != "hé" {
		t.Fatal(s, v)
	}
	s, v, _ = h.ToHeader("t", "k", []byte{0xff})
	if !s.Equal(data.OptionalBytesSchema) || !bytes.Equal(v.([]byte), []byte{0xff}) {
		t.Fatal(s, v)
	}
}
