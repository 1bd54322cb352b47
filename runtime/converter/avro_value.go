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
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// toAvro turns a Connect value of schema cs into the generic Go value
// hamba/avro encodes with the Avro schema as (the writer's schema, which
// with use.latest.version is the registry's and not made from cs).
func toAvro(path string, as avro.Schema, cs *data.Schema, v any) (any, error) {
	if ref, ok := as.(*avro.RefSchema); ok {
		as = ref.Schema()
	}
	if u, ok := as.(*avro.UnionSchema); ok {
		if v == nil {
			if !u.Contains(avro.Null) {
				return nil, fmt.Errorf("%s: null, but the Avro schema %s has no null", atField(path), u)
			}
			return nil, nil
		}
		if !u.Nullable() {
			return nil, fmt.Errorf("%s: the Avro union %s cannot be written (only a union of null and one type can)", atField(path), u)
		}
		_, i := u.Indices()
		branch := u.Types()[i]
		out, err := toAvro(path, branch, cs, v)
		if m, ok := out.(map[string]any); ok && err == nil {
			// hamba/avro reads a map in a union as {branch name: value}.
			return map[string]any{unionBranchName(branch): m}, nil
		}
		return out, err
	}
	if v == nil {
		return nil, fmt.Errorf("%s: null, but the Avro schema %s is not optional", atField(path), as)
	}
	wrong := func() error {
		return fmt.Errorf("%s: a Go %T cannot be written as Avro %s", atField(path), v, as.Type())
	}
	switch t := as.(type) {
	case *avro.RecordSchema:
		st, ok := v.(*data.Struct)
		if !ok {
			return nil, wrong()
		}
		out := make(map[string]any, len(t.Fields()))
		for _, f := range t.Fields() {
			fp := fieldPath(path, f.Name())
			cf := st.Schema().Field(f.Name())
			if cf == nil {
				if !f.HasDefault() {
					return nil, fmt.Errorf("%s: the registry's schema has it without a default, the record's schema lacks it", atField(fp))
				}
				out[f.Name()] = f.Default()
				continue
			}
			fv, err := toAvro(fp, f.Type(), cf.Schema, st.GetIndex(cf.Index))
			if err != nil {
				return nil, err
			}
			out[f.Name()] = fv
		}
		return out, nil
	case *avro.ArraySchema:
		arr, ok := v.([]any)
		if !ok {
			return nil, wrong()
		}
		var elem *data.Schema
		if cs != nil {
			elem = cs.Elem
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			ev, err := toAvro(fmt.Sprintf("%s[%d]", path, i), t.Items(), elem, e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case *avro.MapSchema:
		var elem *data.Schema
		if cs != nil {
			elem = cs.Elem
		}
		out := map[string]any{}
		switch m := v.(type) {
		case map[string]any:
			for k, e := range m {
				ev, err := toAvro(path+"["+k+"]", t.Values(), elem, e)
				if err != nil {
					return nil, err
				}
				out[k] = ev
			}
		case map[any]any:
			for k, e := range m {
				ks, ok := k.(string)
				if !ok {
					return nil, fmt.Errorf("%s: map key %v is a %T; Avro map keys are strings", atField(path), k, k)
				}
				ev, err := toAvro(path+"["+ks+"]", t.Values(), elem, e)
				if err != nil {
					return nil, err
				}
				out[ks] = ev
			}
		default:
			return nil, wrong()
		}
		return out, nil
	case *avro.EnumSchema:
		s, ok := v.(string)
		if !ok {
			return nil, wrong()
		}
		for _, sym := range t.Symbols() {
			if sym == s {
				return s, nil
			}
		}
		return nil, fmt.Errorf("%s: %q is not a symbol of the Avro enum %s %v", atField(path), s, t.FullName(), t.Symbols())
	case *avro.FixedSchema:
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			return decimalToRat(path, v, d)
		}
		return nil, fmt.Errorf("%s: writing Avro fixed is not supported", atField(path))
	case *avro.PrimitiveSchema:
		return primitiveToAvro(path, t, v, wrong)
	}
	return nil, wrong()
}

func decimalToRat(path string, v any, d *avro.DecimalLogicalSchema) (any, error) {
	dec, ok := v.(data.Decimal)
	if !ok {
		return nil, fmt.Errorf("%s: a Go %T cannot be written as an Avro decimal", atField(path), v)
	}
	if int(dec.Scale) != d.Scale() {
		return nil, fmt.Errorf("%s: decimal of scale %d, the Avro schema's scale is %d", atField(path), dec.Scale, d.Scale())
	}
	u := dec.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	return new(big.Rat).SetFrac(u, pow10(dec.Scale)), nil
}

// pow10s holds 10^0 .. 10^38, read only.
var pow10s = func() []*big.Int {
	out := make([]*big.Int, 39)
	for i := range out {
		out[i] = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(i)), nil)
	}
	return out
}()

// pow10 returns 10^n; the result must not be modified.
func pow10(n int32) *big.Int {
	if n >= 0 && int(n) < len(pow10s) {
		return pow10s[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

func primitiveToAvro(path string, t *avro.PrimitiveSchema, v any, wrong func() error) (any, error) {
	if l := t.Logical(); l != nil {
		switch l.Type() {
		case avro.Decimal:
			return decimalToRat(path, v, l.(*avro.DecimalLogicalSchema))
		case avro.Date, avro.TimestampMillis, avro.TimestampMicros:
			if tm, ok := v.(time.Time); ok {
				return tm.UTC(), nil
			}
			return nil, wrong()
		case avro.TimeMillis, avro.TimeMicros:
			if tm, ok := v.(time.Time); ok {
				ms, err := data.TimeToMillis(tm)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", atField(path), err)
				}
				return time.Duration(ms) * time.Millisecond, nil
			}
			return nil, wrong()
		}
	}
	switch t.Type() {
	case avro.Int:
		switch x := v.(type) {
		case int8:
			return int(x), nil
		case int16:
			return int(x), nil
		case int32:
			return int(x), nil
		case int64:
			if x < math.MinInt32 || x > math.MaxInt32 {
				return nil, fmt.Errorf("%s: %d does not fit an Avro int", atField(path), x)
			}
			return int(x), nil
		}
	case avro.Long:
		switch x := v.(type) {
		case int8:
			return int64(x), nil
		case int16:
			return int64(x), nil
		case int32:
			return int64(x), nil
		case int64:
			return x, nil
		}
	case avro.Float:
		if x, ok := v.(float32); ok {
			return x, nil
		}
	case avro.Double:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		}
	case avro.Boolean:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case avro.String:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case avro.Bytes:
		if x, ok := v.([]byte); ok {
			return x, nil
		}
	}
	return nil, wrong()
}

// fromAvro turns hamba/avro's generic value of Avro schema as into the
// Connect value of cs (made from as by connectSchemaOf).
func fromAvro(path string, as avro.Schema, cs *data.Schema, v any) (any, error) {
	return connectValue(path, as, cs, v)
}

func connectValue(path string, as avro.Schema, cs *data.Schema, v any) (any, error) {
	if ref, ok := as.(*avro.RefSchema); ok {
		as = ref.Schema()
	}
	if u, ok := as.(*avro.UnionSchema); ok {
		if v == nil {
			return nil, nil
		}
		_, i := u.Indices()
		branch := u.Types()[i]
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			// hamba/avro gives a record or map in a union as {branch name: value}.
			if inner, ok := m[unionBranchName(branch)]; ok {
				v = inner
			}
		}
		return connectValue(path, branch, cs, v)
	}
	if v == nil {
		return nil, nil
	}
	wrong := func() error {
		return fmt.Errorf("%s: Avro %s decoded as Go %T", atField(path), as.Type(), v)
	}
	switch t := as.(type) {
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, wrong()
		}
		vals := make([]any, len(cs.Fields))
		for i, f := range t.Fields() {
			fv, err := connectValue(fieldPath(path, f.Name()), f.Type(), cs.Fields[i].Schema, m[f.Name()])
			if err != nil {
				return nil, err
			}
			vals[i] = fv
		}
		return data.NewStructTrusted(cs, vals), nil
	case *avro.ArraySchema:
		arr, ok := v.([]any)
		if !ok {
			return nil, wrong()
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			ev, err := connectValue(fmt.Sprintf("%s[%d]", path, i), t.Items(), cs.Elem, e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, wrong()
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			ev, err := connectValue(path+"["+k+"]", t.Values(), cs.Elem, e)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		return out, nil
	case *avro.EnumSchema:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, wrong()
	case *avro.FixedSchema:
		switch x := v.(type) {
		case *big.Rat:
			return ratToDecimal(path, x, int32(t.Logical().(*avro.DecimalLogicalSchema).Scale()))
		case []byte:
			return x, nil
		}
		// hamba decodes a fixed as a byte array of its size.
		if b, ok := fixedBytes(v); ok {
			return b, nil
		}
		return nil, wrong()
	}
	return primitiveValue(path, cs, v, wrong)
}

func fixedBytes(v any) ([]byte, bool) {
	switch x := v.(type) {
	case [16]byte:
		return x[:], true
	}
	return nil, false
}

func primitiveValue(path string, cs *data.Schema, v any, wrong func() error) (any, error) {
	switch cs.Name {
	case data.DecimalName:
		r, ok := v.(*big.Rat)
		if !ok {
			return nil, wrong()
		}
		scale, err := data.DecimalScale(cs)
		if err != nil {
			return nil, err
		}
		return ratToDecimal(path, r, scale)
	case data.DateName:
		if tm, ok := v.(time.Time); ok {
			return tm.UTC(), nil
		}
		if n, ok := asInt64(v); ok { // a default
			return data.DateFromDays(int32(n)), nil
		}
		return nil, wrong()
	case data.TimeName:
		switch x := v.(type) {
		case time.Duration:
			return data.TimeFromMillis(int32(x / time.Millisecond)), nil
		}
		if n, ok := asInt64(v); ok {
			return data.TimeFromMillis(int32(n)), nil
		}
		return nil, wrong()
	case data.TimestampName:
		if tm, ok := v.(time.Time); ok {
			return tm.UTC().Truncate(time.Millisecond), nil
		}
		if n, ok := asInt64(v); ok {
			return data.TimestampFromMillis(n), nil
		}
		return nil, wrong()
	}
	switch cs.Type {
	case data.TypeInt8, data.TypeInt16, data.TypeInt32, data.TypeInt64:
		n, ok := asInt64(v)
		if !ok {
			return nil, wrong()
		}
		switch cs.Type {
		case data.TypeInt8:
			return int8(n), nil
		case data.TypeInt16:
			return int16(n), nil
		case data.TypeInt32:
			return int32(n), nil
		}
		return n, nil
	case data.TypeFloat32:
		switch x := v.(type) {
		case float32:
			return x, nil
		case float64:
			return float32(x), nil
		}
	case data.TypeFloat64:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		}
	case data.TypeBoolean:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case data.TypeString:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case data.TypeBytes:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string: // a default in Avro's JSON form
			b := make([]byte, 0, len(x))
			for _, r := range x {
				b = append(b, byte(r))
			}
			return b, nil
		}
	}
	return nil, wrong()
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64: // a JSON default
		return int64(x), x == math.Trunc(x)
	}
	return 0, false
}

// unionBranchName names a union's branch as hamba/avro's generic encoder
// expects: a named type's full name, else the type.
func unionBranchName(s avro.Schema) string {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}
