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

package properties

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	in := "# comment\n" +
		"   ! another comment\n" +
		"\n" +
		"a=1\n" +
		"b = 2 \n" +
		"c:3\n" +
		"d 4\n" +
		"  e\t=\t  five\n" +
		"key\\ with\\ spaces = v\n" +
		"colon\\:key=x\\=y\n" +
		"multi = one, \\\n" +
		"        two, \\\n" +
		"   three\n" +
		"escapes = tab\\there\\nnewline \\u00e9\\u0041 \\\\ end\n" +
		"emoji=\\ud83d\\ude00\n" +
		"empty=\n" +
		"onlykey\n" +
		"trailing.backslash = a\\\\\n" +
		"next=after\n" +
		"crlf=yes\r\n" +
		"a=override\n"
	entries, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	m := ToMap(entries)
	want := map[string]string{
		"a": "override", "b": "2 ", "c": "3", "d": "4", "e": "five",
		"key with spaces":    "v",
		"colon:key":          "x=y",
		"multi":              "one, two, three",
		"escapes":            "tab\there\nnewline éA \\ end",
		"emoji":              "😀",
		"empty":              "",
		"onlykey":            "",
		"trailing.backslash": "a\\",
		"next":               "after",
		"crlf":               "yes",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%q = %q, want %q", k, m[k], v)
		}
	}
	if len(m) != len(want) {
		t.Errorf("got keys %v", m)
	}
	if entries[0].Line != 4 || entries[len(entries)-1].Line != 21 {
		t.Errorf("line numbers: first %d last %d", entries[0].Line, entries[len(entries)-1].Line)
	}
	if _, err := Parse(strings.NewReader("a=\\u12\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("malformed escape: %v", err)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	entries := []Entry{
		{Key: "plain", Value: "value"},
		{Key: "key with = and : and space", Value: "  leading spaces"},
		{Key: "#notacomment", Value: "!also not"},
		{Key: "ctl", Value: "a\tb\nc\rd\fe\\f\x01"},
		{Key: "unicode", Value: "żółw 😀"},
		{Key: "empty", Value: ""},
	}
	var b bytes.Buffer
	if err := Write(&b, entries); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(entries) {
		t.Fatalf("%d entries from:\n%s", len(got), b.String())
	}
	for i := range entries {
		if got[i].Key != entries[i].Key || got[i].Value != entries[i].Value {
			t.Errorf("%d: got %q=%q want %q=%q", i, got[i].Key, got[i].Value, entries[i].Key, entries[i].Value)
		}
	}
}

// FuzzRoundTrip: whatever key and value, Write then Parse returns them
// (seed corpus runs in go test; go test -fuzz explores further).
func FuzzRoundTrip(f *testing.F) {
	for _, s := range [][2]string{{"a", "b"}, {" k ", " v "}, {"#x", "!y"}, {"a=b:c d", "\\\\\n\t"}, {"ü", "😀\u2028"}, {"k", "trailing\\"}, {"c\r\f\x00", "\tlead\r\n end "}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		if key == "" || !utf8.ValidString(key) || !utf8.ValidString(value) {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, []Entry{{Key: key, Value: value}}); err != nil {
			t.Fatal(err)
		}
		got, err := Parse(&b)
		if err != nil {
			t.Fatalf("%q=%q: %v (%q)", key, value, err, b.String())
		}
		if len(got) != 1 || got[0].Key != key || got[0].Value != value {
			t.Fatalf("%q=%q came back as %+v from %q", key, value, got, b.String())
		}
	})
}

func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{
		"":              {},
		" , ,":          {},
		"a":             {"a"},
		" a ,b,, c d ,": {"a", "b", "c d"},
	} {
		got := SplitList(in)
		if got == nil || !slices.Equal(got, want) {
			t.Errorf("SplitList(%q) = %#v, want %#v", in, got, want)
		}
	}
}
