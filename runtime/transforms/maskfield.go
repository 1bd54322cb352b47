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
	"fmt"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

type maskField struct {
	side        side
	replacement string
	hasRepl     bool
	withDefault bool
	structs     structEdit
	maps        mapEdit
}

func newMaskField(o *Options, s side) Transformation {
	t := &maskField{side: s, withDefault: o.nullDefault()}
	v2 := o.syntaxV2()
	trie := o.trieOption("fields", o.paths("fields", o.RequiredList("fields"), v2))
	t.replacement, t.hasRepl = o.raw("replacement")
	t.structs = structEdit{trie: trie}
	t.maps = mapEdit{trie: trie, entry: func(p fieldPath, name string, v any) (string, any, bool, error) {
		mv, err := t.maskField(p, nil, v)
		return name, mv, true, err
	}}
	return t
}

// maskField masks the value of the field p reaches (nil stays nil).
func (t *maskField) maskField(p fieldPath, schema *data.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	mv, err := t.mask(schema, v)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w", p, err)
	}
	return mv, nil
}

func (t *maskField) Apply(r *Record) (*Record, error) {
	return rewrite(r, t.side, "MaskField", &t.structs, &t.maps, t.withDefault, t.maskField)
}

// mask returns the masked form of v: the replacement converted to v's
// type, or the zero value of v's type.
func (t *maskField) mask(schema *data.Schema, v any) (any, error) {
	if schema != nil && schema.IsLogical() {
		if t.hasRepl {
			return nil, fmt.Errorf("a replacement cannot mask a %s value", schema.Name)
		}
		switch schema.Name {
		case data.DecimalName:
			scale, _ := data.DecimalScale(schema)
			return data.NewDecimal(0, scale), nil
		default:
			return data.TimestampFromMillis(0), nil
		}
	}
	if t.hasRepl {
		switch v.(type) {
		case string:
			return t.replacement, nil
		case int8, int16, int32, int64, float32, float64:
			out, err := castPrimitive(t.replacement, kindOf(v))
			if err != nil {
				return nil, fmt.Errorf("replacement does not fit a %s field: %w", kindOf(v), err)
			}
			return out, nil
		}
		return nil, fmt.Errorf("a replacement can mask numbers and strings only, not %T", v)
	}
	switch x := v.(type) {
	case int8:
		return int8(0), nil
	case int16:
		return int16(0), nil
	case int32:
		return int32(0), nil
	case int64:
		return int64(0), nil
	case float32:
		return float32(0), nil
	case float64:
		return float64(0), nil
	case bool:
		return false, nil
	case string:
		return "", nil
	case []byte:
		return []byte{}, nil
	case []any:
		return []any{}, nil
	case map[string]any:
		return map[string]any{}, nil
	case map[any]any:
		return map[any]any{}, nil
	case data.Decimal:
		return data.NewDecimal(0, x.Scale), nil
	}
	return nil, fmt.Errorf("cannot mask a value of Go type %T", v)
}

// ---- ValueToKey ----

func init() {
	registerBoth("MaskField", "Replaces fields with the zero value of their type, or a replacement",
		[]Option{
			{Name: "fields", Type: "LIST", Required: true, Doc: "Fields to mask."},
			{Name: "replacement", Doc: "Replacement for numeric and string fields; empty masks with the type's zero value."},
			syntaxOption, nullDefaultOption,
		}, newMaskField)
}
