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
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// castTypes are the primitive types Cast converts to.
var castTypes = map[string]data.Type{
	"int8": data.TypeInt8, "int16": data.TypeInt16, "int32": data.TypeInt32, "int64": data.TypeInt64,
	"float32": data.TypeFloat32, "float64": data.TypeFloat64, "boolean": data.TypeBoolean, "string": data.TypeString,
}

// kindOf returns the schema type of a primitive Go value ("" when it is
// none).
func kindOf(v any) data.Type {
	switch v.(type) {
	case int8:
		return data.TypeInt8
	case int16:
		return data.TypeInt16
	case int32:
		return data.TypeInt32
	case int64:
		return data.TypeInt64
	case float32:
		return data.TypeFloat32
	case float64:
		return data.TypeFloat64
	case bool:
		return data.TypeBoolean
	case string:
		return data.TypeString
	}
	return ""
}

var errNotNumber = errors.New("not a number")

// castPrimitive converts a primitive value to a primitive type as Kafka's
// Cast does: numbers convert between each other (fractions truncated),
// booleans are 1 or 0, strings are parsed, anything becomes its string
// form (bytes as base64, timestamps as ISO 8601 in UTC), decimals and
// timestamps (as epoch milliseconds) become numbers. Errors never quote
// the value.
func castPrimitive(v any, to data.Type) (any, error) {
	switch x := v.(type) {
	case []byte:
		if to != data.TypeString {
			return nil, fmt.Errorf("bytes cast to string only, not %s", to)
		}
		return base64.StdEncoding.EncodeToString(x), nil
	case data.Decimal:
		if to == data.TypeString {
			return x.String(), nil
		}
		// Through its decimal text, like a string holding a number.
		v = x.String()
	case time.Time:
		// Timestamp, Date and Time values: ISO 8601 in UTC as a string,
		// epoch milliseconds as a number.
		if to == data.TypeString {
			return x.UTC().Format("2006-01-02T15:04:05.000Z"), nil
		}
		v = x.UnixMilli()
	}
	if to == data.TypeString {
		switch x := v.(type) {
		case string:
			return x, nil
		case float32:
			return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		}
		return fmt.Sprint(v), nil
	}
	var f float64
	var i int64
	isInt := true
	switch x := v.(type) {
	case int8:
		i = int64(x)
	case int16:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	case float32:
		f, isInt = float64(x), false
	case float64:
		f, isInt = x, false
	case bool:
		if x {
			i = 1
		}
	case string:
		s := strings.TrimSpace(x)
		if to == data.TypeBoolean {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return nil, errors.New("not a boolean")
			}
			return b, nil
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			i = n
		} else if g, err := strconv.ParseFloat(s, 64); err == nil {
			f, isInt = g, false
		} else {
			return nil, errNotNumber
		}
	default:
		return nil, fmt.Errorf("cannot cast a %T", v)
	}
	if !isInt && to != data.TypeFloat32 && to != data.TypeFloat64 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("not a finite number")
		}
		i = int64(f)
	} else if isInt {
		f = float64(i)
	}
	switch to {
	case data.TypeInt8:
		return int8(i), nil
	case data.TypeInt16:
		return int16(i), nil
	case data.TypeInt32:
		return int32(i), nil
	case data.TypeInt64:
		return i, nil
	case data.TypeFloat32:
		return float32(f), nil
	case data.TypeFloat64:
		return f, nil
	case data.TypeBoolean:
		if isInt {
			return i != 0, nil
		}
		return f != 0, nil
	}
	return nil, fmt.Errorf("unknown target type %s", to)
}

type cast struct {
	side        side
	whole       data.Type            // cast the whole value; "" when per field
	fields      map[string]data.Type // per field, by path key
	withDefault bool
	structs     structEdit
	maps        mapEdit
	cache       schemaCache // of whole-value casts
}

func newCast(o *Options, s side) Transformation {
	t := &cast{side: s, fields: map[string]data.Type{}, cache: schemaCache{}, withDefault: o.nullDefault()}
	v2 := o.syntaxV2()
	spec := o.RequiredList("spec")
	names := strings.Join(slices.Sorted(maps.Keys(castTypes)), ", ")
	var paths []fieldPath
	for _, item := range spec {
		// The type follows the last colon: a V2 path may hold colons.
		cut := strings.Index(item, ":")
		if v2 {
			cut = strings.LastIndex(item, ":")
		}
		if cut < 0 {
			to, known := castTypes[strings.TrimSpace(item)]
			if !known || len(spec) > 1 {
				o.Fail("spec", "%q is neither field:type nor, alone, a type to cast the whole %s to (types: %s)", item, s, names)
				continue
			}
			t.whole = to
			continue
		}
		field, typ := strings.TrimSpace(item[:cut]), strings.TrimSpace(item[cut+1:])
		to, known := castTypes[typ]
		if !known || field == "" {
			o.Fail("spec", "%q: want field:type with type one of %s", item, names)
			continue
		}
		p, err := parseFieldPath(field, v2)
		if err != nil {
			o.Fail("spec", "%q: %v", item, err)
			continue
		}
		paths = append(paths, p)
		t.fields[p.key()] = to
	}
	trie := o.trieOption("spec", paths)
	t.structs = structEdit{trie: trie, field: func(p fieldPath, f data.Field) (data.Field, bool, error) {
		if !f.Schema.Type.IsPrimitive() {
			return f, false, fmt.Errorf("field %q has type %s; Cast converts primitive fields only", p, f.Schema.Type)
		}
		return data.F(f.Name, &data.Schema{Type: t.fields[p.key()], Optional: f.Schema.Optional}), true, nil
	}}
	t.maps = mapEdit{trie: trie, entry: func(p fieldPath, name string, v any) (string, any, bool, error) {
		c, err := t.castField(p, v)
		return name, c, true, err
	}}
	return t
}

// castField casts the value of the field p reaches (nil stays nil).
func (t *cast) castField(p fieldPath, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	to := t.fields[p.key()]
	c, err := castPrimitive(v, to)
	if err != nil {
		return nil, fmt.Errorf("casting field %q to %s: %w", p, to, err)
	}
	return c, nil
}

func (t *cast) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if t.whole != "" {
		if schema != nil && !schema.Type.IsPrimitive() {
			return nil, fmt.Errorf("Cast of the whole %s needs a primitive schema, found %s", t.side, schema.Type)
		}
		var out any
		if v != nil {
			var err error
			if out, err = castPrimitive(v, t.whole); err != nil {
				return nil, fmt.Errorf("casting the %s to %s: %w", t.side, t.whole, err)
			}
		}
		var ns *data.Schema
		if schema != nil {
			ns = &data.Schema{Type: t.whole, Optional: schema.Optional}
		}
		t.side.set(r, ns, out)
		return r, nil
	}
	return rewrite(r, t.side, "Cast", &t.structs, &t.maps, t.withDefault,
		func(path fieldPath, _ *data.Schema, v any) (any, error) { return t.castField(path, v) })
}

func init() {
	registerBoth("Cast", "Casts fields, or the whole key or value, to another primitive type",
		[]Option{{Name: "spec", Type: "LIST", Required: true,
			Doc: "field:type pairs, comma-separated, or a single type to cast the whole data; types int8, int16, int32, int64, float32, float64, boolean, string."},
			syntaxOption, nullDefaultOption},
		newCast)
}
