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

package data

import (
	"fmt"
	"strings"
)

// Struct is a value of a struct [Schema]: one value per field.
type Struct struct {
	schema *Schema
	values []any
}

// NewStruct returns an empty struct of the given struct schema. It panics
// when schema is not a struct schema (a programming error).
func NewStruct(schema *Schema) *Struct {
	if schema == nil || schema.Type != TypeStruct {
		panic(fmt.Sprintf("data.NewStruct: schema %s is not a struct schema", schema))
	}
	return &Struct{schema: schema, values: make([]any, len(schema.Fields))}
}

// NewStructValues returns a struct of the given struct schema holding
// values in field order, after checking each like Set. The struct keeps
// values (no copy), so a source can carve the values of many structs out
// of one slice; the caller must not change values afterwards.
func NewStructValues(schema *Schema, values []any) (*Struct, error) {
	if err := checkStructValues("data.NewStructValues", schema, values); err != nil {
		return nil, err
	}
	return &Struct{schema: schema, values: values}, nil
}

// NewStructsValues returns len(values)/F structs of the given struct schema
// of F fields, allocated together, the i-th holding values[i*F:(i+1)*F]
// after the checks of NewStructValues (no copy: the caller must not change
// values afterwards). A source that builds a batch of records of one
// schema saves an allocation per record.
func NewStructsValues(schema *Schema, values []any) ([]Struct, error) {
	if schema == nil || schema.Type != TypeStruct {
		return nil, fmt.Errorf("data.NewStructsValues: schema %s is not a struct schema", schema)
	}
	nf := len(schema.Fields)
	if nf == 0 || len(values)%nf != 0 {
		return nil, fmt.Errorf("struct %s has %d fields, got %d values, not a multiple", schema, nf, len(values))
	}
	out := make([]Struct, len(values)/nf)
	for i := range out {
		v := values[i*nf : (i+1)*nf : (i+1)*nf]
		if err := checkStructValues("data.NewStructsValues", schema, v); err != nil {
			return nil, fmt.Errorf("struct %d: %w", i, err)
		}
		out[i] = Struct{schema: schema, values: v}
	}
	return out, nil
}

// checkStructValues checks values against the fields of a struct schema.
func checkStructValues(caller string, schema *Schema, values []any) error {
	if schema == nil || schema.Type != TypeStruct {
		return fmt.Errorf("%s: schema %s is not a struct schema", caller, schema)
	}
	if len(values) != len(schema.Fields) {
		return fmt.Errorf("struct %s has %d fields, got %d values", schema, len(schema.Fields), len(values))
	}
	for i := range schema.Fields {
		f := &schema.Fields[i]
		if f.Index != i {
			return fmt.Errorf("struct %s: field %q has index %d at position %d (build structs with StructOf)", schema, f.Name, f.Index, i)
		}
		if err := f.Schema.Validate(values[i]); err != nil {
			return fmt.Errorf("field %q: %w", f.Name, err)
		}
	}
	return nil
}

// Schema returns the struct's schema.
func (s *Struct) Schema() *Schema { return s.schema }

// Set sets a field after checking the value against the field's schema.
func (s *Struct) Set(name string, value any) error {
	f := s.schema.Field(name)
	if f == nil {
		return fmt.Errorf("struct %s has no field %q", s.schema, name)
	}
	if err := f.Schema.Validate(value); err != nil {
		return fmt.Errorf("field %q: %w", name, err)
	}
	s.values[f.Index] = value
	return nil
}

// Put is Set for building structs in code: it returns the struct for
// chaining and panics on an invalid field or value.
func (s *Struct) Put(name string, value any) *Struct {
	if err := s.Set(name, value); err != nil {
		panic("data.Struct.Put: " + err.Error())
	}
	return s
}

// Get returns the value of a field, its schema default when unset, or nil
// when the field does not exist.
func (s *Struct) Get(name string) any {
	v, _ := s.Lookup(name)
	return v
}

// Lookup returns the value of a field (or its default when unset) and
// whether the field exists.
func (s *Struct) Lookup(name string) (any, bool) {
	f := s.schema.Field(name)
	if f == nil {
		return nil, false
	}
	v := s.values[f.Index]
	if v == nil {
		v = f.Schema.Default
	}
	return v, true
}

// GetIndex returns the raw value at a field index (no default applied).
func (s *Struct) GetIndex(i int) any { return s.values[i] }

// Validate checks every field against its schema: required fields set,
// values of the right types.
func (s *Struct) Validate() error { return s.validate("") }

func (s *Struct) validate(path string) error {
	for _, f := range s.schema.Fields {
		if err := f.Schema.validate(join(path, f.Name), s.values[f.Index]); err != nil {
			return err
		}
	}
	return nil
}

// Equal reports whether two structs have equal schemas and field values.
func (s *Struct) Equal(o *Struct) bool {
	if s == nil || o == nil {
		return s == o
	}
	if !s.schema.Equal(o.schema) {
		return false
	}
	for i := range s.values {
		if !ValuesEqual(s.values[i], o.values[i]) {
			return false
		}
	}
	return true
}

// String renders the struct as Struct{name=value,...}, like Kafka.
func (s *Struct) String() string {
	var b strings.Builder
	b.WriteString("Struct{")
	first := true
	for _, f := range s.schema.Fields {
		v := s.values[f.Index]
		if v == nil {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%s=%v", f.Name, v)
	}
	b.WriteByte('}')
	return b.String()
}

// NewStructTrusted returns a struct of the given struct schema holding
// values in field order without checking them, for producers that derive
// each value from the field's schema itself (a converter decoding by the
// schema, a connector mapping typed columns): the checks of Set or
// NewStructValues would only repeat theirs. values must hold one valid
// value per field and is kept (no copy). It panics when schema is not a
// struct schema or the count differs (programming errors).
func NewStructTrusted(schema *Schema, values []any) *Struct {
	s := new(Struct)
	InitStructTrusted(s, schema, values)
	return s
}

// InitStructTrusted sets *dst to what NewStructTrusted(schema, values)
// returns, for producers that allocate many structs at once (a slice of
// Structs instead of one allocation each).
func InitStructTrusted(dst *Struct, schema *Schema, values []any) {
	if schema == nil || schema.Type != TypeStruct || len(values) != len(schema.Fields) {
		panic(fmt.Sprintf("data.NewStructTrusted: %d values for schema %s", len(values), schema))
	}
	*dst = Struct{schema: schema, values: values}
}
