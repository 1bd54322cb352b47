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

package condition

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short stays", "abc", 10, "abc"},
		{"exact stays", "abcdefghij", 10, "abcdefghij"},
		{"ascii cut", "abcdefghijk", 10, "abcdef ..."},
		// "é" is 2 bytes at 5-6: a cut at byte 6 would split it.
		{"never half a rune", "abcdeéfghijk", 10, "abcde ..."},
		// "€" is 3 bytes at 4-6.
		{"three-byte rune", "abcd€fghijk", 10, "abcd ..."},
		{"tiny bound", "abcdef", 3, " .."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.in, tc.n)
			if got != tc.want {
				t.Fatalf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
			if len(got) > tc.n || !utf8.ValidString(got) {
				t.Fatalf("Truncate(%q, %d) = %q: %d bytes, valid UTF-8 %v", tc.in, tc.n, got, len(got), utf8.ValidString(got))
			}
		})
	}
	// The API's bound, with a message of multi-byte runes straddling it.
	long := strings.Repeat("ü", MaxMessage)
	got := Truncate(long, MaxMessage)
	if len(got) > MaxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, cutMark) {
		t.Fatalf("a %d-byte message of 2-byte runes cut to %d bytes, valid UTF-8 %v", len(long), len(got), utf8.ValidString(got))
	}
}
