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

package transforms

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// ---- RegexRouter ----

type regexRouter struct {
	re       *regexp.Regexp
	template string // Go's Expand syntax
	routes   topicCache
}

func (t *regexRouter) Apply(r *Record) (*Record, error) {
	r.Topic = t.routes.get(r.Topic, func(topic string) string {
		m := t.re.FindStringSubmatchIndex(topic)
		if m == nil {
			return topic
		}
		return string(t.re.ExpandString(nil, t.template, topic, m))
	})
	return r, nil
}

// topicCache remembers a function of the topic name: connectors use few
// topics, so a regular expression runs once per topic, not per record. It
// is bounded; a chain runs on one goroutine.
type topicCache map[string]string

func (c topicCache) get(topic string, f func(string) string) string {
	if v, ok := c[topic]; ok {
		return v
	}
	v := f(topic)
	if len(c) >= 1024 {
		clear(c)
	}
	c[topic] = v
	return v
}

// javaReplacement turns a Java Matcher replacement ($1, ${name}, \$ for a
// literal dollar) into Go's Regexp.Expand template.
func javaReplacement(s string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", errors.New("ends with a lone backslash")
			}
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$':
			if i+1 < len(s) && s[i+1] == '{' {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					return "", errors.New("has ${ without a closing }")
				}
				b.WriteString(s[i : i+end+1])
				i += end
				continue
			}
			j := i + 1
			if j >= len(s) || s[j] < '0' || s[j] > '9' {
				return "", errors.New("has $ not followed by a group number or {name}: write \\$ for a dollar sign")
			}
			// Like Java: the first digit always belongs to the reference,
			// further digits while the number stays a valid group.
			n := int(s[j] - '0')
			j++
			for j < len(s) && s[j] >= '0' && s[j] <= '9' && n*10+int(s[j]-'0') <= groups {
				n = n*10 + int(s[j]-'0')
				j++
			}
			if n > groups {
				return "", fmt.Errorf("refers to group %d but the regex has %d", n, groups)
			}
			b.WriteString("${" + strconv.Itoa(n) + "}")
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// ---- TimestampRouter ----

type timestampRouter struct {
	topicFormat string
	format      []dateToken
}

func (t *timestampRouter) Apply(r *Record) (*Record, error) {
	if r.Timestamp.IsZero() {
		return nil, errors.New("the record has no timestamp to route by")
	}
	ts := formatDate(t.format, r.Timestamp.UTC())
	r.Topic = strings.ReplaceAll(strings.ReplaceAll(t.topicFormat, "${topic}", r.Topic), "${timestamp}", ts)
	return r, nil
}

// dateToken is a run of one pattern letter (Java SimpleDateFormat), or a
// literal (letter 0).
type dateToken struct {
	letter byte
	n      int
	lit    string
}

// parseDateFormat parses the subset of Java's SimpleDateFormat patterns
// that topic names use: y M d H h m s S a E D, quoted literals ('...',
// ” for a quote) and any non-letter as is.
func parseDateFormat(p string) ([]dateToken, error) {
	var out []dateToken
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			if i+1 < len(p) && p[i+1] == '\'' {
				out = append(out, dateToken{lit: "'"})
				i += 2
				continue
			}
			end := strings.IndexByte(p[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated quote")
			}
			out = append(out, dateToken{lit: p[i+1 : i+1+end]})
			i += end + 2
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			if !strings.ContainsRune("yMdHhmsSaED", rune(c)) {
				return nil, fmt.Errorf("pattern letter %q is not supported (use y M d H h m s S a E D)", c)
			}
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			out = append(out, dateToken{letter: c, n: j - i})
			i = j
		default:
			out = append(out, dateToken{lit: string(c)})
			i++
		}
	}
	return out, nil
}

func pad(b []byte, v, n int) []byte {
	s := strconv.Itoa(v)
	for k := len(s); k < n; k++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func formatDate(tokens []dateToken, t time.Time) string {
	b := make([]byte, 0, 32)
	for _, tk := range tokens {
		switch tk.letter {
		case 0:
			b = append(b, tk.lit...)
		case 'y':
			if tk.n == 2 {
				b = pad(b, t.Year()%100, 2)
			} else {
				b = pad(b, t.Year(), tk.n)
			}
		case 'M':
			switch {
			case tk.n >= 4:
				b = append(b, t.Month().String()...)
			case tk.n == 3:
				b = append(b, t.Month().String()[:3]...)
			default:
				b = pad(b, int(t.Month()), tk.n)
			}
		case 'd':
			b = pad(b, t.Day(), tk.n)
		case 'D':
			b = pad(b, t.YearDay(), tk.n)
		case 'H':
			b = pad(b, t.Hour(), tk.n)
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b = pad(b, h, tk.n)
		case 'm':
			b = pad(b, t.Minute(), tk.n)
		case 's':
			b = pad(b, t.Second(), tk.n)
		case 'S':
			b = pad(b, t.Nanosecond()/1e6, tk.n)
		case 'a':
			if t.Hour() < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'E':
			if tk.n >= 4 {
				b = append(b, t.Weekday().String()...)
			} else {
				b = append(b, t.Weekday().String()[:3]...)
			}
		}
	}
	return string(b)
}

// ---- Filter ----

var filter = TransformFunc(func(*Record) (*Record, error) { return nil, nil })

// ---- headers ----

type insertHeader struct {
	header, value string
}

func (t *insertHeader) Apply(r *Record) (*Record, error) {
	h := make(data.Headers, len(r.Headers), len(r.Headers)+1)
	copy(h, r.Headers)
	h.Add(t.header, data.StringSchema, t.value)
	r.Headers = h
	return r, nil
}

type dropHeaders struct {
	headers map[string]bool
}

func (t *dropHeaders) Apply(r *Record) (*Record, error) {
	if !slices.ContainsFunc(r.Headers, func(h data.Header) bool { return t.headers[h.Key] }) {
		return r, nil
	}
	out := make(data.Headers, 0, len(r.Headers))
	for _, h := range r.Headers {
		if !t.headers[h.Key] {
			out = append(out, h)
		}
	}
	r.Headers = out
	return r, nil
}

type headerFrom struct {
	side        side
	fields      []fieldPath
	headers     []string
	move        bool
	withDefault bool
	structs     structEdit // drops the moved fields
	maps        mapEdit
}

func (t *headerFrom) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if v == nil {
		return r, nil
	}
	h := make(data.Headers, len(r.Headers), len(r.Headers)+len(t.fields))
	copy(h, r.Headers)
	if schema == nil {
		m, err := requireMap(v, "HeaderFrom")
		if err != nil {
			return nil, err
		}
		for i, p := range t.fields {
			x, err := mapValueAt(m, p)
			if err != nil {
				return nil, fmt.Errorf("HeaderFrom: %w", err)
			}
			h.Add(t.headers[i], nil, x)
		}
	} else {
		st, err := requireStruct(schema, v, "HeaderFrom")
		if err != nil {
			return nil, err
		}
		for i, p := range t.fields {
			f := schemaFieldAt(schema, p)
			if f == nil {
				return nil, fmt.Errorf("field %q is not in the %s schema", p, t.side)
			}
			h.Add(t.headers[i], f.Schema, structValueAt(st, p, t.withDefault))
		}
	}
	r.Headers = h
	if !t.move {
		return r, nil
	}
	return rewrite(r, t.side, "HeaderFrom", &t.structs, &t.maps, t.withDefault, nil)
}

func newHeaderFrom(o *Options, s side) Transformation {
	v2 := o.syntaxV2()
	t := &headerFrom{side: s, fields: o.paths("fields", o.RequiredList("fields"), v2), headers: o.RequiredList("headers"),
		withDefault: o.nullDefault()}
	if len(t.fields) != len(t.headers) && len(t.fields) > 0 && len(t.headers) > 0 {
		o.Fail("headers", "lists %d headers for %d fields: give one header per field", len(t.headers), len(t.fields))
	}
	if _, ok := o.raw("operation"); !ok {
		o.Required("operation")
	} else {
		t.move = o.OneOf("operation", "copy", "move", "copy") == "move"
	}
	trie := o.trieOption("fields", t.fields)
	drop := func(fieldPath, data.Field) (data.Field, bool, error) { return data.Field{}, false, nil }
	t.structs = structEdit{trie: trie, field: drop}
	t.maps = mapEdit{trie: trie, entry: func(fieldPath, string, any) (string, any, bool, error) { return "", nil, false, nil }}
	return t
}

func init() {
	registerTransform(&TransformType{Class: kafkaPrefix + "RegexRouter", Aliases: []string{"RegexRouter"},
		Doc: "Renames the topic of records whose topic matches the regex entirely, with a replacement that may use its groups ($1, ${name}).",
		Options: []Option{
			{Name: "regex", Required: true, Doc: "Regular expression the whole topic must match."},
			{Name: "replacement", Required: true, Doc: "New topic; $1 ... refer to the regex's groups, \\$ is a dollar sign."},
		},
		New: func(o *Options) Transformation {
			expr := o.Required("regex")
			// Kafka's replacement may legitimately be empty only in theory;
			// it is required there too.
			repl := o.Required("replacement")
			re, err := regexp.Compile("^(?:" + expr + ")$")
			if err != nil {
				o.Fail("regex", "not a valid regular expression: %v", err)
				return nil
			}
			tmpl, err := javaReplacement(repl, re.NumSubexp())
			if err != nil {
				o.Fail("replacement", "%v", err)
			}
			return &regexRouter{re: re, template: tmpl, routes: topicCache{}}
		}})
	registerTransform(&TransformType{Class: kafkaPrefix + "TimestampRouter", Aliases: []string{"TimestampRouter"},
		Doc: "Renames the topic after the record timestamp (UTC), for example to write into a topic per day.",
		Options: []Option{
			{Name: "topic.format", Default: "${topic}-${timestamp}", Doc: "New topic; ${topic} is the old topic, ${timestamp} the formatted timestamp."},
			{Name: "timestamp.format", Default: "yyyyMMdd", Doc: "Java SimpleDateFormat pattern of the timestamp (letters y M d H h m s S a E D)."},
		},
		New: func(o *Options) Transformation {
			tf, err := parseDateFormat(o.String("timestamp.format", "yyyyMMdd"))
			if err != nil {
				o.Fail("timestamp.format", "%v", err)
			}
			return &timestampRouter{topicFormat: o.String("topic.format", "${topic}-${timestamp}"), format: tf}
		}})
	registerTransform(&TransformType{Class: kafkaPrefix + "Filter", Aliases: []string{"Filter"},
		Doc: "Drops every record; use it with a predicate to drop the records that match (or, negated, do not).",
		New: func(*Options) Transformation { return filter }})
	registerTransform(&TransformType{Class: kafkaPrefix + "InsertHeader", Aliases: []string{"InsertHeader"},
		Doc: "Adds a header with a literal string value.",
		Options: []Option{
			{Name: "header", Required: true, Doc: "Header key."},
			{Name: "value.literal", Required: true, Doc: "Header value."},
		},
		New: func(o *Options) Transformation {
			return &insertHeader{header: o.Required("header"), value: o.Required("value.literal")}
		}})
	registerTransform(&TransformType{Class: kafkaPrefix + "DropHeaders", Aliases: []string{"DropHeaders"},
		Doc:     "Removes every header with one of the keys.",
		Options: []Option{{Name: "headers", Type: "LIST", Required: true, Doc: "Header keys to remove."}},
		New: func(o *Options) Transformation {
			t := &dropHeaders{headers: map[string]bool{}}
			for _, h := range o.RequiredList("headers") {
				t.headers[h] = true
			}
			return t
		}})
	registerBoth("HeaderFrom", "Copies or moves fields into headers",
		[]Option{
			{Name: "fields", Type: "LIST", Required: true, Doc: "Fields to copy or move."},
			{Name: "headers", Type: "LIST", Required: true, Doc: "Header keys, one per field, in the same order."},
			{Name: "operation", Required: true, Doc: "move (remove the fields) or copy."},
			syntaxOption, nullDefaultOption,
		}, newHeaderFrom)
}
