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

package data

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// plain8 must agree with the byte table on every word, including the
// boundary bytes of each class.
func TestPlain8MatchesTable(t *testing.T) {
	edge := []byte{0x00, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 0x7e, 0x7f, 0x80, 0xa0, 0xff}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200000; n++ {
		var w [8]byte
		for i := range w {
			if rng.IntN(2) == 0 {
				w[i] = edge[rng.IntN(len(edge))]
			} else {
				w[i] = byte(rng.IntN(256))
			}
		}
		if n%3 == 0 { // mostly plain words with at most one special byte
			for i := range w {
				w[i] = 'a' + byte(rng.IntN(26))
			}
			w[rng.IntN(8)] = edge[rng.IntN(len(edge))]
		}
		want := true
		var x uint64
		for i, c := range w {
			want = want && jsonPlain[c]
			x |= uint64(c) << (8 * i)
		}
		if got := plain8(x); got != want {
			t.Fatalf("plain8(% x) = %v, want %v", w, got, want)
		}
	}
}

// Long strings take the eight-byte path: a special character at any
// position must still be escaped.
func TestWriteJSONStringLong(t *testing.T) {
	for _, special := range []string{"\x00", "\x1f", `"`, `\`, "\n", "é", "😀", "\xff"} {
		for pos := 0; pos <= 20; pos++ {
			s := strings.Repeat("a", pos) + special + strings.Repeat("b", 20-pos)
			var b bytes.Buffer
			WriteJSONString(&b, s)
			var back string
			if err := json.Unmarshal(b.Bytes(), &back); err != nil {
				t.Fatalf("%q → %s: %v", s, b.Bytes(), err)
			}
			if want := strings.ToValidUTF8(s, "\ufffd"); back != want {
				t.Fatalf("%q → %s → %q", s, b.Bytes(), back)
			}
		}
	}
}
