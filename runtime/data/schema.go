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

// Package data is the data model of Conveyor records, modelled on Kafka
// Connect's org.apache.kafka.connect.data: a record carries its key and its
// value as typed Go values with an optional [Schema], so that converters and
// connectors agree on types and on NULLs.
//
// Values are plain Go values:
//
//	Schema type          Go value
//	int8 .. int64        int8, int16, int32, int64
//	float32, float64     float32, float64
//	boolean              bool
//	string               string
//	bytes                []byte
//	array                []any
//	map                  map[any]any (map[string]any is accepted too)
//	struct               *Struct
//	Timestamp, Date, Time (logical)   time.Time
//	Decimal (logical)    Decimal
//	absent (NULL)        nil
//
// A nil *Schema means "schemaless": the value is any of the Go values above
// and converters infer what they can.
package data

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Type is the physical type of a [Schema]. The string values are the type
// names that Kafka's JsonConverter writes, except float32/float64 which it
// calls "float" and "double" (see the converter package).
type Type string

// Schema types.
const (
	TypeInt8    Type = "int8"
	TypeInt16   Type = "int16"
	TypeInt32   Type = "int32"
	TypeInt64   Type = "int64"
	TypeFloat32 Type = "float32"
	TypeFloat64 Type = "float64"
	TypeBoolean Type = "boolean"
	TypeString  Type = "string"
	TypeBytes   Type = "bytes"
	TypeArray   Type = "array"
	TypeMap     Type = "map"
	TypeStruct  Type = "struct"
)

// IsPrimitive reports whether t is neither array, map nor struct.
func (t Type) IsPrimitive() bool {
	switch t {
	case TypeArray, TypeMap, TypeStruct:
		return false
	}
	return true
}

// Valid reports whether t is one of the schema types.
func (t Type) Valid() bool {
	switch t {
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64, TypeFloat32, TypeFloat64,
		TypeBoolean, TypeString, TypeBytes, TypeArray, TypeMap, TypeStruct:
		return true
	}
	return false
}

// Schema describes a value: its type, whether it may be NULL, and for
// complex types the schemas of its parts. Schemas are treated as immutable
// once built; share them freely between records.
type Schema struct {
	// Type is the physical type.
	Type Type
	// Optional means the value may be nil (NULL).
	Optional bool
	// Name is the schema's name, for structs and logical types (for example
	// [TimestampName]). Empty means unnamed.
	Name string
	// Version is the schema version; 0 means none.
	Version int32
	// Doc is free documentation.
	Doc string
	// Default is the default value (a Go value of this schema), or nil for none.
	Default any
	// Parameters are free key/value parameters (Decimal keeps its scale here).
	Parameters map[string]string
	// Fields are the fields of a struct, in order. Field.Index is its position.
	Fields []Field
	// Key is the key schema of a map.
	Key *Schema
	// Elem is the element schema of an array and the value schema of a map.
	Elem *Schema
}

// Field is one field of a struct schema.
type Field struct {
	// Name of the field, unique within its struct.
	Name string
	// Index is the position of the field in its struct.
	Index int
	// Schema of the field's value.
	Schema *Schema
}

// Predefined primitive schemas. Do not modify them.
var (
	Int8Schema    = &Schema{Type: TypeInt8}
	Int16Schema   = &Schema{Type: TypeInt16}
	Int32Schema   = &Schema{Type: TypeInt32}
	Int64Schema   = &Schema{Type: TypeInt64}
	Float32Schema = &Schema{Type: TypeFloat32}
	Float64Schema = &Schema{Type: TypeFloat64}
	BooleanSchema = &Schema{Type: TypeBoolean}
	StringSchema  = &Schema{Type: TypeString}
	BytesSchema   = &Schema{Type: TypeBytes}

	OptionalInt8Schema    = &Schema{Type: TypeInt8, Optional: true}
	OptionalInt16Schema   = &Schema{Type: TypeInt16, Optional: true}
	OptionalInt32Schema   = &Schema{Type: TypeInt32, Optional: true}
	OptionalInt64Schema   = &Schema{Type: TypeInt64, Optional: true}
	OptionalFloat32Schema = &Schema{Type: TypeFloat32, Optional: true}
	OptionalFloat64Schema = &Schema{Type: TypeFloat64, Optional: true}
	OptionalBooleanSchema = &Schema{Type: TypeBoolean, Optional: true}
	OptionalStringSchema  = &Schema{Type: TypeString, Optional: true}
	OptionalBytesSchema   = &Schema{Type: TypeBytes, Optional: true}
)

// ArrayOf returns a required array schema whose elements follow elem.
func ArrayOf(elem *Schema) *Schema { return &Schema{Type: TypeArray, Elem: elem} }

// MapOf returns a required map schema with the given key and value schemas.
func MapOf(key, value *Schema) *Schema { return &Schema{Type: TypeMap, Key: key, Elem: value} }

// StructOf returns a required struct schema with the given name (may be
// empty) and fields; it sets each field's Index from its position.
func StructOf(name string, fields ...Field) *Schema {
	fs := make([]Field, len(fields))
	for i, f := range fields {
		f.Index = i
		fs[i] = f
	}
	return &Schema{Type: TypeStruct, Name: name, Fields: fs}
}

// F is shorthand for a struct field, for use with [StructOf].
func F(name string, schema *Schema) Field { return Field{Name: name, Schema: schema} }

// AsOptional returns a shallow copy of s with Optional set.
func (s *Schema) AsOptional() *Schema {
	c := *s
	c.Optional = true
	return &c
}

// WithDefault returns a shallow copy of s with the default value set.
func (s *Schema) WithDefault(v any) *Schema {
	c := *s
	c.Default = v
	return &c
}

// Field returns the struct field with the given name, or nil.
func (s *Schema) Field(name string) *Field {
	if s == nil {
		return nil
	}
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// Equal reports whether two schemas are equal in every attribute,
// recursively. Two nil schemas are equal.
func (s *Schema) Equal(o *Schema) bool {
	if s == nil || o == nil {
		return s == o
	}
	if s.Type != o.Type || s.Optional != o.Optional || s.Name != o.Name ||
		s.Version != o.Version || s.Doc != o.Doc || !maps.Equal(s.Parameters, o.Parameters) {
		return false
	}
	if !ValuesEqual(s.Default, o.Default) {
		return false
	}
	if len(s.Fields) != len(o.Fields) {
		return false
	}
	for i := range s.Fields {
		if s.Fields[i].Name != o.Fields[i].Name || s.Fields[i].Index != o.Fields[i].Index ||
			!s.Fields[i].Schema.Equal(o.Fields[i].Schema) {
			return false
		}
	}
	return s.Key.Equal(o.Key) && s.Elem.Equal(o.Elem)
}

// String renders the schema compactly, for messages and debugging.
func (s *Schema) String() string {
	if s == nil {
		return "<schemaless>"
	}
	var b strings.Builder
	s.write(&b)
	return b.String()
}

func (s *Schema) write(b *strings.Builder) {
	if s.Name != "" {
		b.WriteString(s.Name)
		b.WriteByte('(')
		b.WriteString(string(s.Type))
		b.WriteByte(')')
	} else {
		b.WriteString(string(s.Type))
	}
	switch s.Type {
	case TypeArray:
		b.WriteByte('<')
		writeChild(b, s.Elem)
		b.WriteByte('>')
	case TypeMap:
		b.WriteByte('<')
		writeChild(b, s.Key)
		b.WriteByte(',')
		writeChild(b, s.Elem)
		b.WriteByte('>')
	case TypeStruct:
		b.WriteByte('{')
		for i, f := range s.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.Name)
			b.WriteByte(':')
			writeChild(b, f.Schema)
		}
		b.WriteByte('}')
	}
	if s.Optional {
		b.WriteByte('?')
	}
}

func writeChild(b *strings.Builder, s *Schema) {
	if s == nil {
		b.WriteString("<nil>")
		return
	}
	s.write(b)
}

// Check verifies that the schema itself is well formed: a known type, map
// and array children present, unique struct field names with matching
// indices, logical types on the right physical type, and a default value
// that matches the schema.
func (s *Schema) Check() error {
	return s.check("")
}

func (s *Schema) check(path string) error {
	if s == nil {
		return fmt.Errorf("%snil schema", at(path))
	}
	if !s.Type.Valid() {
		return fmt.Errorf("%sunknown schema type %q", at(path), s.Type)
	}
	switch s.Type {
	case TypeArray:
		if s.Elem == nil {
			return fmt.Errorf("%sarray schema without element schema", at(path))
		}
		if err := s.Elem.check(path + "[]"); err != nil {
			return err
		}
	case TypeMap:
		if s.Key == nil || s.Elem == nil {
			return fmt.Errorf("%smap schema needs both key and value schemas", at(path))
		}
		if err := s.Key.check(path + "<key>"); err != nil {
			return err
		}
		if err := s.Elem.check(path + "<value>"); err != nil {
			return err
		}
	case TypeStruct:
		seen := make(map[string]bool, len(s.Fields))
		for i, f := range s.Fields {
			if f.Name == "" {
				return fmt.Errorf("%sstruct field %d has no name", at(path), i)
			}
			if seen[f.Name] {
				return fmt.Errorf("%sduplicate struct field %q", at(path), f.Name)
			}
			seen[f.Name] = true
			if f.Index != i {
				return fmt.Errorf("%sstruct field %q has index %d at position %d (build structs with StructOf)", at(path), f.Name, f.Index, i)
			}
			if err := f.Schema.check(join(path, f.Name)); err != nil {
				return err
			}
		}
	}
	if lt, ok := logicalTypes[s.Name]; ok && lt != s.Type {
		return fmt.Errorf("%slogical type %s must be %s, not %s", at(path), s.Name, lt, s.Type)
	}
	if s.Name == DecimalName {
		if _, err := DecimalScale(s); err != nil {
			return fmt.Errorf("%s%w", at(path), err)
		}
	}
	if s.Default != nil {
		if err := s.validate(path, s.Default); err != nil {
			return fmt.Errorf("%sinvalid default value: %w", at(path), err)
		}
	}
	return nil
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Validate checks that value conforms to the schema (recursively). A nil
// value is valid for an optional schema or one with a default.
func (s *Schema) Validate(value any) error {
	return s.validate("", value)
}

func (s *Schema) validate(path string, value any) error {
	if s == nil {
		return nil
	}
	if value == nil {
		if s.Optional || s.Default != nil {
			return nil
		}
		return fmt.Errorf("%snull value for required %s schema", at(path), s.Type)
	}
	if s.IsLogical() {
		return s.validateLogical(path, value)
	}
	bad := func() error {
		return fmt.Errorf("%sinvalid Go type %T for %s schema", at(path), value, s.Type)
	}
	switch s.Type {
	case TypeInt8:
		if _, ok := value.(int8); !ok {
			return bad()
		}
	case TypeInt16:
		if _, ok := value.(int16); !ok {
			return bad()
		}
	case TypeInt32:
		if _, ok := value.(int32); !ok {
			return bad()
		}
	case TypeInt64:
		if _, ok := value.(int64); !ok {
			return bad()
		}
	case TypeFloat32:
		if _, ok := value.(float32); !ok {
			return bad()
		}
	case TypeFloat64:
		if _, ok := value.(float64); !ok {
			return bad()
		}
	case TypeBoolean:
		if _, ok := value.(bool); !ok {
			return bad()
		}
	case TypeString:
		if _, ok := value.(string); !ok {
			return bad()
		}
	case TypeBytes:
		if _, ok := value.([]byte); !ok {
			return bad()
		}
	case TypeArray:
		arr, ok := value.([]any)
		if !ok {
			return bad()
		}
		for i, e := range arr {
			if err := s.Elem.validate(path+"["+strconv.Itoa(i)+"]", e); err != nil {
				return err
			}
		}
	case TypeMap:
		switch m := value.(type) {
		case map[any]any:
			for k, v := range m {
				if err := s.Key.validate(path+"<key>", k); err != nil {
					return err
				}
				if err := s.Elem.validate(path+"["+fmt.Sprint(k)+"]", v); err != nil {
					return err
				}
			}
		case map[string]any:
			if s.Key.Type != TypeString {
				return bad()
			}
			for k, v := range m {
				if err := s.Elem.validate(path+"["+k+"]", v); err != nil {
					return err
				}
			}
		default:
			return bad()
		}
	case TypeStruct:
		st, ok := value.(*Struct)
		if !ok || st == nil {
			return bad()
		}
		if st.schema != s && !st.schema.Equal(s) {
			return fmt.Errorf("%sstruct schema %s does not match %s", at(path), st.schema, s)
		}
		return st.validate(path)
	}
	return nil
}

// SortedFieldNames returns the names of a struct schema's fields, sorted;
// handy for stable output.
func (s *Schema) SortedFieldNames() []string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	slices.Sort(names)
	return names
}
