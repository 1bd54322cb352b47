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

// Package properties reads and writes Java-properties-style files as
// java.util.Properties does: "key=value", "key: value" or "key value"
// lines, "#" and "!" comments, backslash escapes (\t \n \r \f \uXXXX and
// escaped separators), and lines continued with a trailing backslash.
// Files are read as UTF-8 (Java's load(Reader)).
package properties

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Entry is one key/value pair with the line it started on.
type Entry struct {
	Key   string
	Value string
	Line  int
}

// Parse reads all entries in file order. A key that repeats appears
// several times; use [ToMap] to keep the last value.
func Parse(r io.Reader) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var out []Entry
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(strings.TrimSuffix(sc.Text(), "\r"), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		start := lineNo
		// Join continuation lines: an odd number of trailing backslashes.
		for endsWithContinuation(line) {
			line = line[:len(line)-1]
			if !sc.Scan() {
				break
			}
			lineNo++
			line += strings.TrimLeft(strings.TrimSuffix(sc.Text(), "\r"), " \t\f")
		}
		key, value, err := splitLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out = append(out, Entry{Key: key, Value: value, Line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading properties: %w", err)
	}
	return out, nil
}

func endsWithContinuation(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitLine separates key and value at the first unescaped '=', ':' or
// whitespace and unescapes both.
func splitLine(line string) (string, string, error) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	rawKey := line[:i]
	rest := line[i:]
	// Skip whitespace, then one '=' or ':', then whitespace.
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescape(rawKey)
	if err != nil {
		return "", "", fmt.Errorf("key %q: %w", rawKey, err)
	}
	value, err := unescape(rest)
	if err != nil {
		return "", "", fmt.Errorf("value of %q: %w", key, err)
	}
	return key, value, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uXXXX escape`)
			}
			r, ok := hex4(s[i+1 : i+5])
			if !ok {
				return "", fmt.Errorf(`malformed \uXXXX escape`)
			}
			i += 4
			// Combine UTF-16 surrogate pairs written as two escapes.
			if r >= 0xD800 && r < 0xDC00 && i+7 <= len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, ok := hex4(s[i+3 : i+7]); ok && lo >= 0xDC00 && lo < 0xE000 {
					r = (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
					i += 6
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

func hex4(s string) (rune, bool) {
	if len(s) != 4 {
		return 0, false
	}
	var r rune
	for _, h := range s {
		r <<= 4
		switch {
		case h >= '0' && h <= '9':
			r |= h - '0'
		case h >= 'a' && h <= 'f':
			r |= h - 'a' + 10
		case h >= 'A' && h <= 'F':
			r |= h - 'A' + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// ToMap returns the entries as a map; later keys win.
func ToMap(entries []Entry) map[string]string {
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Key] = e.Value
	}
	return m
}

// Load reads a properties file into a map.
func Load(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening properties file: %w", err)
	}
	defer f.Close()
	entries, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return ToMap(entries), nil
}

// EscapeKey escapes a key so that Parse reads it back unchanged.
func EscapeKey(s string) string { return escape(s, true) }

// EscapeValue escapes a value so that Parse reads it back unchanged.
func EscapeValue(s string) string { return escape(s, false) }

func escape(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case '=', ':':
			if key {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '#', '!':
			if i == 0 {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case ' ':
			if key || i == 0 {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		default:
			if r < 0x20 || r == 0x7f || r == utf8.RuneError {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// Write writes entries as "key=value" lines.
func Write(w io.Writer, entries []Entry) error {
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(EscapeKey(e.Key))
		b.WriteByte('=')
		b.WriteString(EscapeValue(e.Value))
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

// SplitList splits a list-typed value, Kafka's LIST config type:
// comma-separated items with the blanks around them trimmed and empty
// items dropped. It never returns nil.
func SplitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
