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
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// toProto fills m from a Connect struct.
func toProto(path string, s *data.Schema, st *data.Struct, m *dynamicpb.Message) error {
	md := m.Descriptor()
	for _, f := range s.Fields {
		fp := fieldPath(path, f.Name)
		fd := md.Fields().ByName(protoreflect.Name(f.Name))
		v := st.Get(f.Name)
		if fd == nil {
			if v == nil {
				continue
			}
			return fmt.Errorf("%s: message %s has no such field (use.latest.version: the latest schema lacks it)", atField(fp), md.FullName())
		}
		if v == nil {
			if !f.Schema.Optional && f.Schema.Default == nil {
				return fmt.Errorf("%s: null in a required field", atField(fp))
			}
			continue
		}
		switch {
		case fd.IsList():
			items, ok := v.([]any)
			if !ok {
				return fmt.Errorf("%s: %T is not an array", atField(fp), v)
			}
			l := m.Mutable(fd).List()
			for i, e := range items {
				pv, err := protoValue(fmt.Sprintf("%s[%d]", fp, i), f.Schema.Elem, fd, e, l.NewElement)
				if err != nil {
					return err
				}
				l.Append(pv)
			}
		case fd.IsMap():
			entries, ok := v.(map[any]any)
			if !ok {
				return fmt.Errorf("%s: %T is not a map", atField(fp), v)
			}
			mp := m.Mutable(fd).Map()
			for k, e := range entries {
				kp := fmt.Sprintf("%s[%v]", fp, k)
				kv, err := protoValue(kp, f.Schema.Key, fd.MapKey(), k, nil)
				if err != nil {
					return err
				}
				ev, err := protoValue(kp, f.Schema.Elem, fd.MapValue(), e, mp.NewValue)
				if err != nil {
					return err
				}
				mp.Set(kv.MapKey(), ev)
			}
		default:
			pv, err := protoValue(fp, f.Schema, fd, v, func() protoreflect.Value { return m.NewField(fd) })
			if err != nil {
				return err
			}
			m.Set(fd, pv)
		}
	}
	return nil
}

// protoValue converts one value to the kind of fd; newMsg makes an empty
// message of fd's message type.
func protoValue(path string, s *data.Schema, fd protoreflect.FieldDescriptor, v any, newMsg func() protoreflect.Value) (protoreflect.Value, error) {
	if v == nil {
		return protoreflect.Value{}, fmt.Errorf("%s: null cannot be an element of a Protobuf repeated field or map", atField(path))
	}
	wrong := func() (protoreflect.Value, error) {
		return protoreflect.Value{}, fmt.Errorf("%s: a %T cannot be written to Protobuf %s field %s", atField(path), v, fd.Kind(), fd.FullName())
	}
	switch fd.Kind() {
	case protoreflect.MessageKind:
		mv := newMsg()
		m := mv.Message().Interface().(*dynamicpb.Message)
		set := func(name string, x protoreflect.Value) {
			m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), x)
		}
		switch fd.Message().FullName() {
		case pbTimestamp:
			t, ok := v.(time.Time)
			if !ok {
				return wrong()
			}
			ms := data.TimestampToMillis(t)
			set("seconds", protoreflect.ValueOfInt64(floorDiv(ms, 1000)))
			set("nanos", protoreflect.ValueOfInt32(int32(ms-floorDiv(ms, 1000)*1000)*1e6))
		case pbDate:
			t, ok := v.(time.Time)
			if !ok {
				return wrong()
			}
			t = t.UTC()
			set("year", protoreflect.ValueOfInt32(int32(t.Year())))
			set("month", protoreflect.ValueOfInt32(int32(t.Month())))
			set("day", protoreflect.ValueOfInt32(int32(t.Day())))
		case pbTimeOfDay:
			t, ok := v.(time.Time)
			if !ok {
				return wrong()
			}
			ms, err := data.TimeToMillis(t)
			if err != nil {
				return protoreflect.Value{}, fmt.Errorf("%s: %w", atField(path), err)
			}
			set("hours", protoreflect.ValueOfInt32(ms/3600000))
			set("minutes", protoreflect.ValueOfInt32(ms/60000%60))
			set("seconds", protoreflect.ValueOfInt32(ms/1000%60))
			set("nanos", protoreflect.ValueOfInt32(ms%1000*1e6))
		case pbDecimal:
			d, ok := v.(data.Decimal)
			if !ok {
				return wrong()
			}
			set("value", protoreflect.ValueOfBytes(data.DecimalToBytes(d)))
			set("scale", protoreflect.ValueOfInt32(d.Scale))
		default:
			st, ok := v.(*data.Struct)
			if !ok {
				return wrong()
			}
			if err := toProto(path, s, st, m); err != nil {
				return protoreflect.Value{}, err
			}
		}
		return mv, nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		switch x := v.(type) {
		case int8:
			return protoreflect.ValueOfInt32(int32(x)), nil
		case int16:
			return protoreflect.ValueOfInt32(int32(x)), nil
		case int32:
			return protoreflect.ValueOfInt32(x), nil
		}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		if x, ok := v.(int64); ok {
			return protoreflect.ValueOfInt64(x), nil
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if x, ok := v.(int64); ok && x >= 0 && x <= math.MaxUint32 {
			return protoreflect.ValueOfUint32(uint32(x)), nil
		}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if x, ok := v.(int64); ok && x >= 0 {
			return protoreflect.ValueOfUint64(uint64(x)), nil
		}
	case protoreflect.FloatKind:
		if x, ok := v.(float32); ok {
			return protoreflect.ValueOfFloat32(x), nil
		}
	case protoreflect.DoubleKind:
		if x, ok := v.(float64); ok {
			return protoreflect.ValueOfFloat64(x), nil
		}
	case protoreflect.BoolKind:
		if x, ok := v.(bool); ok {
			return protoreflect.ValueOfBool(x), nil
		}
	case protoreflect.StringKind:
		if x, ok := v.(string); ok {
			return protoreflect.ValueOfString(x), nil
		}
	case protoreflect.BytesKind:
		if x, ok := v.([]byte); ok {
			return protoreflect.ValueOfBytes(x), nil
		}
	case protoreflect.EnumKind:
		if x, ok := v.(string); ok {
			if ev := fd.Enum().Values().ByName(protoreflect.Name(x)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), nil
			}
			return protoreflect.Value{}, fmt.Errorf("%s: %q is not a value of enum %s", atField(path), x, fd.Enum().FullName())
		}
	}
	return wrong()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// fromProto reads a message as a Connect struct of schema s.
func fromProto(path string, s *data.Schema, m protoreflect.Message) (*data.Struct, error) {
	md := m.Descriptor()
	values := make([]any, len(s.Fields))
	for i, f := range s.Fields {
		fp := fieldPath(path, f.Name)
		fd := md.Fields().ByName(protoreflect.Name(f.Name))
		switch {
		case fd.IsList():
			l := m.Get(fd).List()
			if l.Len() == 0 && f.Schema.Optional {
				continue
			}
			items := make([]any, l.Len())
			for j := range items {
				x, err := protoToConnect(fmt.Sprintf("%s[%d]", fp, j), f.Schema.Elem, fd, l.Get(j))
				if err != nil {
					return nil, err
				}
				items[j] = x
			}
			values[i] = items
		case fd.IsMap():
			mp := m.Get(fd).Map()
			if mp.Len() == 0 && f.Schema.Optional {
				continue
			}
			out := make(map[any]any, mp.Len())
			var err error
			mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				var kx, vx any
				if kx, err = protoToConnect(fp+"<key>", f.Schema.Key, fd.MapKey(), k.Value()); err != nil {
					return false
				}
				if vx, err = protoToConnect(fmt.Sprintf("%s[%v]", fp, kx), f.Schema.Elem, fd.MapValue(), v); err != nil {
					return false
				}
				out[kx] = vx
				return true
			})
			if err != nil {
				return nil, err
			}
			values[i] = out
		default:
			if fd.HasPresence() && !m.Has(fd) {
				if !f.Schema.Optional {
					if f.Schema.Default == nil {
						return nil, fmt.Errorf("%s: absent from the message but required", atField(fp))
					}
					values[i] = f.Schema.Default
				}
				continue
			}
			x, err := protoToConnect(fp, f.Schema, fd, m.Get(fd))
			if err != nil {
				return nil, err
			}
			values[i] = x
		}
	}
	return data.NewStructTrusted(s, values), nil
}

// protoToConnect converts one Protobuf value of fd's kind to a Connect value.
func protoToConnect(path string, s *data.Schema, fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		m := v.Message()
		get := func(name string) protoreflect.Value {
			return m.Get(m.Descriptor().Fields().ByName(protoreflect.Name(name)))
		}
		switch s.Name {
		case data.TimestampName:
			return time.Unix(get("seconds").Int(), get("nanos").Int()).UTC().Truncate(time.Millisecond), nil
		case data.DateName:
			return time.Date(int(get("year").Int()), time.Month(get("month").Int()), int(get("day").Int()), 0, 0, 0, 0, time.UTC), nil
		case data.TimeName:
			ms := get("hours").Int()*3600000 + get("minutes").Int()*60000 + get("seconds").Int()*1000 + get("nanos").Int()/1e6
			return data.TimeFromMillis(int32(ms)), nil
		case data.DecimalName:
			want, _ := data.DecimalScale(s)
			if sc := int32(get("scale").Int()); sc != want {
				return nil, fmt.Errorf("%s: a decimal of scale %d in a field of scale %d", atField(path), sc, want)
			}
			return data.DecimalFromBytes(get("value").Bytes(), want), nil
		}
		return fromProto(path, s, m)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		x := int32(v.Int())
		switch s.Type {
		case data.TypeInt8:
			if x < math.MinInt8 || x > math.MaxInt8 {
				return nil, fmt.Errorf("%s: %d does not fit its Connect type int8", atField(path), x)
			}
			return int8(x), nil
		case data.TypeInt16:
			if x < math.MinInt16 || x > math.MaxInt16 {
				return nil, fmt.Errorf("%s: %d does not fit its Connect type int16", atField(path), x)
			}
			return int16(x), nil
		}
		return x, nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int(), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return int64(v.Uint()), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if v.Uint() > math.MaxInt64 {
			return nil, fmt.Errorf("%s: %d does not fit Connect's int64", atField(path), v.Uint())
		}
		return int64(v.Uint()), nil
	case protoreflect.FloatKind:
		return float32(v.Float()), nil
	case protoreflect.DoubleKind:
		return v.Float(), nil
	case protoreflect.BoolKind:
		return v.Bool(), nil
	case protoreflect.StringKind:
		return v.String(), nil
	case protoreflect.BytesKind:
		return append([]byte{}, v.Bytes()...), nil // never nil: an empty value is not a null
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name()), nil
		}
		return nil, fmt.Errorf("%s: %d is not a value of enum %s", atField(path), v.Enum(), fd.Enum().FullName())
	}
	return nil, fmt.Errorf("%s: Protobuf kind %s cannot be read", atField(path), fd.Kind())
}
