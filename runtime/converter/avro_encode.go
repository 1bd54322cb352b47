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

// The direct Avro writer: a struct of plain fields (integers, floats,
// booleans, strings, bytes, nested structs, each optional or not) is
// written straight into Avro's binary encoding, instead of being copied
// into a map[string]any that hamba/avro then walks, looking up an encoder
// for each value's Go type. Avro's binary encoding of such values is
// fixed (zig-zag varints, little-endian floats, length-prefixed bytes,
// union branch indexes), so the bytes are hamba's; anything else (logical
// types, arrays, maps, enums, a value of another Go type, a field the
// record lacks) gives up, and the general path writes the record (or
// reports its error). Tests compare both on every case.

import (
	"encoding/binary"
	"math"

	"github.com/hamba/avro/v2"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// appendAvroDirect appends v, of Connect schema cs, in the binary
// encoding of Avro schema as; ok false: the general path must write it.
func appendAvroDirect(dst []byte, as avro.Schema, cs *data.Schema, v any) ([]byte, bool) {
	switch t := as.(type) {
	case *avro.RefSchema:
		return appendAvroDirect(dst, t.Schema(), cs, v)
	case *avro.UnionSchema:
		if !t.Nullable() {
			return dst, false
		}
		null, branch := t.Indices()
		if v == nil {
			return appendAvroLong(dst, int64(null)), true
		}
		return appendAvroDirect(appendAvroLong(dst, int64(branch)), t.Types()[branch], cs, v)
	case *avro.RecordSchema:
		st, ok := v.(*data.Struct)
		if !ok || st == nil {
			return dst, false
		}
		for _, f := range t.Fields() {
			cf := st.Schema().Field(f.Name())
			if cf == nil {
				return dst, false // the registry's default: the general path
			}
			if dst, ok = appendAvroDirect(dst, f.Type(), cf.Schema, st.GetIndex(cf.Index)); !ok {
				return dst, false
			}
		}
		return dst, true
	case *avro.PrimitiveSchema:
		if t.Logical() != nil || v == nil {
			return dst, false
		}
		switch t.Type() {
		case avro.Int:
			switch x := v.(type) {
			case int8:
				return appendAvroLong(dst, int64(x)), true
			case int16:
				return appendAvroLong(dst, int64(x)), true
			case int32:
				return appendAvroLong(dst, int64(x)), true
			}
		case avro.Long:
			switch x := v.(type) {
			case int8:
				return appendAvroLong(dst, int64(x)), true
			case int16:
				return appendAvroLong(dst, int64(x)), true
			case int32:
				return appendAvroLong(dst, int64(x)), true
			case int64:
				return appendAvroLong(dst, x), true
			}
		case avro.Float:
			if x, ok := v.(float32); ok {
				return binary.LittleEndian.AppendUint32(dst, math.Float32bits(x)), true
			}
		case avro.Double:
			switch x := v.(type) {
			case float64:
				return binary.LittleEndian.AppendUint64(dst, math.Float64bits(x)), true
			case float32:
				return binary.LittleEndian.AppendUint64(dst, math.Float64bits(float64(x))), true
			}
		case avro.Boolean:
			if x, ok := v.(bool); ok {
				if x {
					return append(dst, 1), true
				}
				return append(dst, 0), true
			}
		case avro.String:
			if x, ok := v.(string); ok {
				return append(appendAvroLong(dst, int64(len(x))), x...), true
			}
		case avro.Bytes:
			if x, ok := v.([]byte); ok {
				return append(appendAvroLong(dst, int64(len(x))), x...), true
			}
		}
	}
	return dst, false
}

// appendAvroLong appends an Avro int or long: zig-zag, then a varint.
func appendAvroLong(dst []byte, i int64) []byte {
	return binary.AppendUvarint(dst, (uint64(i)<<1)^uint64(i>>63))
}
