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
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Schema properties and parameters of Confluent's AvroData, so that
// schemas survive a trip through Avro.
const (
	avroConnectType   = "connect.type"   // int8 or int16 on an Avro int
	avroConnectName   = "connect.name"   // the Connect name of a logical type
	avroDefaultName   = "ConnectDefault" // name of unnamed structs
	avroDefaultNS     = "io.confluent.connect.avro"
	avroEnumParam     = "io.confluent.connect.avro.Enum" // a string that was an Avro enum: its name
	avroPrecision     = "connect.decimal.precision"      // a Decimal's precision
	avroDefaultPrec   = 64
	conveyorEnumOrder = "conveyor.avro.enum.symbols" // the enum's symbols in order, comma-separated
)

// avroSchemaText maps a Connect schema to Avro schema JSON the way
// Confluent's AvroData does: structs as records (unnamed ones as
// io.confluent.connect.avro.ConnectDefault, ConnectDefault2, ...),
// optional schemas as unions with null, the logical types as Avro's.
func avroSchemaText(s *data.Schema) (string, error) {
	v, err := avroSchemaOf("", s, &avroNames{defined: map[string]bool{}}, true)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// avroNames tracks the named types of one schema: a second use of a name
// refers to the first, and unnamed structs are numbered.
type avroNames struct {
	unnamed int
	defined map[string]bool
}

func avroSchemaOf(path string, s *data.Schema, unnamed *avroNames, top bool) (any, error) {
	base, err := avroBase(path, s, unnamed)
	if err != nil {
		return nil, err
	}
	if s.Optional && !top {
		return []any{"null", base}, nil
	}
	return base, nil
}

func avroBase(path string, s *data.Schema, unnamed *avroNames) (any, error) {
	switch s.Name {
	case data.DecimalName:
		scale, err := data.DecimalScale(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", atField(path), err)
		}
		prec := avroDefaultPrec
		if p, ok := s.Parameters[avroPrecision]; ok {
			if prec, err = strconv.Atoi(p); err != nil {
				return nil, fmt.Errorf("%s: decimal precision %q is not a number", atField(path), p)
			}
		}
		return map[string]any{"type": "bytes", "logicalType": "decimal", "precision": prec, "scale": scale, avroConnectName: data.DecimalName}, nil
	case data.DateName:
		return map[string]any{"type": "int", "logicalType": "date", avroConnectName: data.DateName}, nil
	case data.TimeName:
		return map[string]any{"type": "int", "logicalType": "time-millis", avroConnectName: data.TimeName}, nil
	case data.TimestampName:
		return map[string]any{"type": "long", "logicalType": "timestamp-millis", avroConnectName: data.TimestampName}, nil
	}
	switch s.Type {
	case data.TypeInt8, data.TypeInt16:
		return map[string]any{"type": "int", avroConnectType: string(s.Type)}, nil
	case data.TypeInt32:
		return "int", nil
	case data.TypeInt64:
		return "long", nil
	case data.TypeFloat32:
		return "float", nil
	case data.TypeFloat64:
		return "double", nil
	case data.TypeBoolean:
		return "boolean", nil
	case data.TypeBytes:
		return "bytes", nil
	case data.TypeString:
		if name, ok := s.Parameters[avroEnumParam]; ok {
			name = avroName(name)
			if unnamed.defined[name] {
				return name, nil
			}
			unnamed.defined[name] = true
			return map[string]any{"type": "enum", "name": name, "symbols": enumSymbols(s)}, nil
		}
		return "string", nil
	case data.TypeArray:
		items, err := avroSchemaOf(path+"[]", s.Elem, unnamed, false)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case data.TypeMap:
		if s.Key.Type != data.TypeString || s.Key.Optional {
			return nil, fmt.Errorf("%s: a map with %s keys cannot be mapped to Avro (Avro maps have required string keys)", atField(path), s.Key)
		}
		values, err := avroSchemaOf(path+"<value>", s.Elem, unnamed, false)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "map", "values": values}, nil
	case data.TypeStruct:
		name := s.Name
		if name == "" {
			unnamed.unnamed++
			name = avroDefaultNS + "." + avroDefaultName
			if unnamed.unnamed > 1 {
				name += strconv.Itoa(unnamed.unnamed)
			}
		}
		name = avroName(name)
		if unnamed.defined[name] {
			return name, nil
		}
		unnamed.defined[name] = true
		fields := make([]any, 0, len(s.Fields))
		for _, f := range s.Fields {
			fp := fieldPath(path, f.Name)
			t, err := avroSchemaOf(fp, f.Schema, unnamed, false)
			if err != nil {
				return nil, err
			}
			field := map[string]any{"name": f.Name, "type": t}
			switch {
			case f.Schema.Default != nil:
				d, err := avroDefault(fp, f.Schema, f.Schema.Default)
				if err != nil {
					return nil, err
				}
				if f.Schema.Optional { // the union's first branch must match the default
					field["type"] = []any{t.([]any)[1], "null"}
				}
				field["default"] = d
			case f.Schema.Optional:
				field["default"] = nil
			}
			fields = append(fields, field)
		}
		rec := map[string]any{"type": "record", "name": name, "fields": fields}
		if s.Doc != "" {
			rec["doc"] = s.Doc
		}
		return rec, nil
	}
	return nil, fmt.Errorf("%s: schema type %s cannot be mapped to Avro", atField(path), s.Type)
}

// avroName makes a Connect name a valid Avro full name: each part starts
// with a letter or _ and holds only letters, digits and _.
func avroName(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		var b strings.Builder
		for j, r := range p {
			ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (j > 0 && r >= '0' && r <= '9')
			if ok {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		if b.Len() == 0 {
			b.WriteByte('_')
		}
		parts[i] = b.String()
	}
	return strings.Join(parts, ".")
}

func enumSymbols(s *data.Schema) []string {
	if order, ok := s.Parameters[conveyorEnumOrder]; ok {
		return strings.Split(order, ",")
	}
	var out []string
	for k := range s.Parameters {
		if sym, ok := strings.CutPrefix(k, avroEnumParam+"."); ok {
			out = append(out, sym)
		}
	}
	slices.Sort(out)
	return out
}

// avroDefault renders a Connect default as an Avro JSON default.
func avroDefault(path string, s *data.Schema, v any) (any, error) {
	switch x := v.(type) {
	case int8, int16, int32, int64, float32, float64, bool, string:
		return x, nil
	case []byte:
		return string(bytesAsLatin1(x)), nil
	case data.Decimal:
		return string(bytesAsLatin1(data.DecimalToBytes(x))), nil
	case time.Time:
		switch s.Name {
		case data.DateName:
			return data.DateToDays(x)
		case data.TimeName:
			return data.TimeToMillis(x)
		}
		return data.TimestampToMillis(x), nil
	}
	return nil, fmt.Errorf("%s: a default of Go type %T cannot be written as an Avro default", atField(path), v)
}

// bytesAsLatin1 is Avro's JSON form of bytes: each byte one code point.
func bytesAsLatin1(b []byte) []rune {
	out := make([]rune, len(b))
	for i, c := range b {
		out[i] = rune(c)
	}
	return out
}

// connectSchemaOf maps an Avro schema to a Connect schema, the reverse of
// avroSchemaOf; what has no Connect form is an error naming the field.
func connectSchemaOf(path string, s avro.Schema, optional bool) (*data.Schema, error) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	var out *data.Schema
	switch t := s.(type) {
	case *avro.UnionSchema:
		if !t.Nullable() {
			return nil, fmt.Errorf("%s: the Avro union %s cannot be mapped (only a union of null and one type can)", atField(path), t)
		}
		_, i := t.Indices()
		return connectSchemaOf(path, t.Types()[i], true)
	case *avro.RecordSchema:
		fields := make([]data.Field, 0, len(t.Fields()))
		for _, f := range t.Fields() {
			fp := fieldPath(path, f.Name())
			fs, err := connectSchemaOf(fp, f.Type(), false)
			if err != nil {
				return nil, err
			}
			if f.HasDefault() && f.Default() != nil {
				d, err := connectValue(fp, f.Type(), fs, f.Default())
				if err != nil {
					return nil, fmt.Errorf("%s: default: %w", atField(fp), err)
				}
				fs = fs.WithDefault(d)
			}
			fields = append(fields, data.F(f.Name(), fs))
		}
		name := t.FullName()
		if strings.HasPrefix(name, avroDefaultNS+"."+avroDefaultName) {
			name = ""
		}
		out = data.StructOf(name, fields...)
		out.Doc = t.Doc()
	case *avro.ArraySchema:
		e, err := connectSchemaOf(path+"[]", t.Items(), false)
		if err != nil {
			return nil, err
		}
		out = data.ArrayOf(e)
	case *avro.MapSchema:
		e, err := connectSchemaOf(path+"<value>", t.Values(), false)
		if err != nil {
			return nil, err
		}
		out = data.MapOf(data.StringSchema, e)
	case *avro.EnumSchema:
		params := map[string]string{avroEnumParam: t.FullName(), conveyorEnumOrder: strings.Join(t.Symbols(), ",")}
		for _, sym := range t.Symbols() {
			params[avroEnumParam+"."+sym] = sym
		}
		out = &data.Schema{Type: data.TypeString, Parameters: params}
	case *avro.FixedSchema:
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			out = decimalSchema(d)
		} else {
			out = &data.Schema{Type: data.TypeBytes}
		}
	case *avro.PrimitiveSchema:
		var err error
		if out, err = connectPrimitive(path, t); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: the Avro schema %s cannot be mapped", atField(path), s)
	}
	out.Optional = optional
	return out, nil
}

func decimalSchema(d *avro.DecimalLogicalSchema) *data.Schema {
	s := data.DecimalSchema(int32(d.Scale()))
	s.Parameters[avroPrecision] = strconv.Itoa(d.Precision())
	return s
}

func connectPrimitive(path string, t *avro.PrimitiveSchema) (*data.Schema, error) {
	if l := t.Logical(); l != nil {
		switch l.Type() {
		case avro.Decimal:
			return decimalSchema(l.(*avro.DecimalLogicalSchema)), nil
		case avro.Date:
			return data.DateSchema(), nil
		case avro.TimeMillis, avro.TimeMicros:
			return data.TimeSchema(), nil
		case avro.TimestampMillis, avro.TimestampMicros:
			return data.TimestampSchema(), nil
		}
		// uuid and the local timestamps read as their physical type.
	}
	switch t.Type() {
	case avro.Int:
		switch t.Prop(avroConnectType) {
		case "int8":
			return &data.Schema{Type: data.TypeInt8}, nil
		case "int16":
			return &data.Schema{Type: data.TypeInt16}, nil
		}
		return &data.Schema{Type: data.TypeInt32}, nil
	case avro.Long:
		return &data.Schema{Type: data.TypeInt64}, nil
	case avro.Float:
		return &data.Schema{Type: data.TypeFloat32}, nil
	case avro.Double:
		return &data.Schema{Type: data.TypeFloat64}, nil
	case avro.Boolean:
		return &data.Schema{Type: data.TypeBoolean}, nil
	case avro.String:
		return &data.Schema{Type: data.TypeString}, nil
	case avro.Bytes:
		return &data.Schema{Type: data.TypeBytes}, nil
	}
	return nil, fmt.Errorf("%s: the Avro type %s cannot be mapped (a null alone has no Connect form)", atField(path), t.Type())
}

// ratToDecimal turns hamba's *big.Rat into a Decimal of the given scale.
func ratToDecimal(path string, r *big.Rat, scale int32) (data.Decimal, error) {
	n := new(big.Int).Mul(r.Num(), pow10(scale))
	q, m := new(big.Int).QuoRem(n, r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		return data.Decimal{}, fmt.Errorf("%s: %s has more than %d decimal places", atField(path), r.RatString(), scale)
	}
	return data.Decimal{Unscaled: q, Scale: scale}, nil
}
