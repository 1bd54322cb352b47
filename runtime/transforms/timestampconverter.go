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
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Target types of TimestampConverter (Kafka's spelling).
const (
	tsString    = "string"
	tsUnix      = "unix"
	tsDate      = "Date"
	tsTime      = "Time"
	tsTimestamp = "Timestamp"
)

// goLayout turns parsed SimpleDateFormat tokens into a Go time layout, for
// parsing (formatting uses formatDate, which needs no layout).
func goLayout(tokens []dateToken) (string, error) {
	pick := func(short bool, a, b string) string {
		if short {
			return a
		}
		return b
	}
	var b strings.Builder
	for _, tk := range tokens {
		switch tk.letter {
		case 0:
			b.WriteString(tk.lit)
		case 'y':
			b.WriteString(pick(tk.n == 2, "06", "2006"))
		case 'M':
			switch {
			case tk.n >= 4:
				b.WriteString("January")
			case tk.n == 3:
				b.WriteString("Jan")
			default:
				b.WriteString(pick(tk.n == 1, "1", "01"))
			}
		case 'd':
			b.WriteString(pick(tk.n == 1, "2", "02"))
		case 'H':
			b.WriteString("15")
		case 'h':
			b.WriteString(pick(tk.n == 1, "3", "03"))
		case 'm':
			b.WriteString(pick(tk.n == 1, "4", "04"))
		case 's':
			b.WriteString(pick(tk.n == 1, "5", "05"))
		case 'S':
			if l := b.String(); !strings.HasSuffix(l, ".") && !strings.HasSuffix(l, ",") {
				return "", errors.New("S (milliseconds) must follow a . or , to be parsed")
			}
			b.WriteString(strings.Repeat("0", tk.n))
		case 'a':
			b.WriteString("PM")
		case 'E':
			b.WriteString(pick(tk.n < 4, "Mon", "Monday"))
		default:
			return "", fmt.Errorf("pattern letter %q cannot be parsed", tk.letter)
		}
	}
	return b.String(), nil
}

type timestampConverter struct {
	side        side
	field       fieldPath // nil converts the whole key or value
	target      string
	format      []dateToken
	layout      string // for parsing string inputs; "" when format is unset
	precision   time.Duration
	withDefault bool
	structs     structEdit
	maps        mapEdit
}

func newTimestampConverter(o *Options, s side) Transformation {
	t := &timestampConverter{side: s, field: o.path("field", o.syntaxV2()), withDefault: o.nullDefault(),
		target: o.OneOf("target.type", "", tsString, tsUnix, tsDate, tsTime, tsTimestamp)}
	if t.field != nil {
		trie := o.trieOption("field", []fieldPath{t.field})
		t.structs = structEdit{trie: trie,
			field: func(_ fieldPath, f data.Field) (data.Field, bool, error) {
				return data.F(f.Name, t.targetSchema(f.Schema.Optional)), true, nil
			},
			missing: func(p fieldPath, _ bool) (*data.Field, error) {
				return nil, fmt.Errorf("field %q is not in the %s schema", p, s)
			}}
		// Schemaless, a missing field becomes a null, as in Kafka.
		t.maps = mapEdit{trie: trie,
			entry: func(p fieldPath, name string, v any) (string, any, bool, error) {
				c, err := t.convertField(p, v)
				return name, c, true, err
			},
			missing: func(_ fieldPath, parentFound bool) (any, bool, error) { return nil, parentFound, nil }}
	}
	if _, ok := o.raw("target.type"); !ok {
		o.Required("target.type")
	}
	if f := o.String("format", ""); f != "" {
		tokens, err := parseDateFormat(f)
		if err != nil {
			o.Fail("format", "%v", err)
		}
		t.format = tokens
		if t.layout, err = goLayout(tokens); err != nil {
			o.Fail("format", "%v", err)
		}
	} else if t.target == tsString {
		o.Fail("format", "target.type=string needs a format (a Java SimpleDateFormat pattern such as yyyy-MM-dd'T'HH:mm:ss)")
	}
	switch o.OneOf("unix.precision", "milliseconds", "seconds", "milliseconds", "microseconds", "nanoseconds") {
	case "seconds":
		t.precision = time.Second
	case "microseconds":
		t.precision = time.Microsecond
	case "nanoseconds":
		t.precision = time.Nanosecond
	default:
		t.precision = time.Millisecond
	}
	return t
}

// targetSchema is the schema of a converted value.
func (t *timestampConverter) targetSchema(optional bool) *data.Schema {
	var s *data.Schema
	switch t.target {
	case tsString:
		s = &data.Schema{Type: data.TypeString}
	case tsUnix:
		s = &data.Schema{Type: data.TypeInt64}
	case tsDate:
		s = data.DateSchema()
	case tsTime:
		s = data.TimeSchema()
	default:
		s = data.TimestampSchema()
	}
	s.Optional = optional
	return s
}

// toTime reads a timestamp from a Timestamp/Date/Time value, an integer
// (unix time in the configured precision) or a string (parsed with the
// format).
func (t *timestampConverter) toTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x.UTC(), nil
	case int64:
		return time.Unix(0, 0).Add(time.Duration(x) * t.precision).UTC(), nil
	case int32:
		return time.Unix(0, 0).Add(time.Duration(x) * t.precision).UTC(), nil
	case string:
		if t.layout == "" {
			return time.Time{}, errors.New("the timestamp is a string: set format to parse it")
		}
		ts, err := time.ParseInLocation(t.layout, x, time.UTC)
		if err != nil {
			return time.Time{}, errors.New("the string does not match format")
		}
		return ts, nil
	}
	return time.Time{}, fmt.Errorf("cannot read a timestamp from %T", v)
}

// convert converts a timestamp value (nil stays nil).
func (t *timestampConverter) convert(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	ts, err := t.toTime(v)
	if err != nil {
		return nil, err
	}
	switch t.target {
	case tsString:
		return formatDate(t.format, ts), nil
	case tsUnix:
		return ts.UnixNano() / int64(t.precision), nil
	case tsDate:
		return time.Date(ts.Year(), ts.Month(), ts.Day(), 0, 0, 0, 0, time.UTC), nil
	case tsTime:
		return time.Date(1970, 1, 1, ts.Hour(), ts.Minute(), ts.Second(), ts.Nanosecond()/1e6*1e6, time.UTC), nil
	}
	return ts, nil
}

// convertField converts the field p reaches.
func (t *timestampConverter) convertField(p fieldPath, v any) (any, error) {
	c, err := t.convert(v)
	if err != nil {
		return nil, fmt.Errorf("TimestampConverter on field %q: %w", p, err)
	}
	return c, nil
}

func (t *timestampConverter) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if t.field == nil {
		out, err := t.convert(v)
		if err != nil {
			return nil, fmt.Errorf("TimestampConverter on the %s: %w", t.side, err)
		}
		var ns *data.Schema
		if schema != nil {
			ns = t.targetSchema(schema.Optional)
		}
		t.side.set(r, ns, out)
		return r, nil
	}
	return rewrite(r, t.side, "TimestampConverter", &t.structs, &t.maps, t.withDefault,
		func(path fieldPath, _ *data.Schema, v any) (any, error) { return t.convertField(path, v) })
}

func init() {
	registerBoth("TimestampConverter", "Converts timestamps between strings, unix time and the Timestamp, Date and Time types",
		[]Option{
			{Name: "field", Doc: "Field holding the timestamp; empty converts the whole key or value."},
			{Name: "target.type", Required: true, Doc: "string, unix, Date, Time or Timestamp."},
			{Name: "format", Doc: "Java SimpleDateFormat pattern to write strings with (target.type=string) and to parse string inputs."},
			{Name: "unix.precision", Default: "milliseconds", Doc: "Unit of unix times, read and written: seconds, milliseconds, microseconds or nanoseconds."},
			syntaxOption, nullDefaultOption,
		}, newTimestampConverter)
}
