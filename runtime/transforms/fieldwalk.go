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
	"slices"
	"sort"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Reading and rewriting the fields that field paths reach, in structs with
// a schema and in schemaless maps. As in Kafka:
//
//   - a struct on the way to a field is read with its default when it is
//     null; the field itself with its default only under
//     replace.null.with.default=true (KIP-1040), which also governs the
//     fields a rewrite copies;
//   - a path that leaves the data (a missing field, a null or a non-struct
//     on the way) reaches nothing; what that means is the transformation's
//     call: Cast, MaskField and ReplaceField leave the data as it is, while
//     ExtractField, HeaderFrom, TimestampConverter and ValueToKey refuse a
//     schema that lacks the field;
//   - a rewrite builds new structs and maps and never changes its input.

// asMap returns a schemaless value as a map with string keys.
func asMap(v any) (map[string]any, bool) {
	switch v.(type) {
	case map[string]any, map[any]any:
		m, err := requireMap(v, "")
		return m, err == nil
	}
	return nil, false
}

// schemaFieldAt returns the field of the struct schema s that p reaches,
// or nil when there is none.
func schemaFieldAt(s *data.Schema, p fieldPath) *data.Field {
	for _, step := range p.parent() {
		f := s.Field(step)
		if f == nil || f.Schema.Type != data.TypeStruct {
			return nil
		}
		s = f.Schema
	}
	if s == nil || s.Type != data.TypeStruct {
		return nil
	}
	return s.Field(p.last())
}

// structValueAt returns the value p reaches in st (nil when it reaches
// nothing); withDefault applies the field's default to a null.
func structValueAt(st *data.Struct, p fieldPath, withDefault bool) any {
	for _, step := range p.parent() {
		v, _ := st.Lookup(step)
		next, ok := v.(*data.Struct)
		if !ok {
			return nil
		}
		st = next
	}
	f := st.Schema().Field(p.last())
	if f == nil {
		return nil
	}
	return valueOf(st, f.Index, withDefault)
}

// valueOf returns field i of st, with its default for a null when
// withDefault is set.
func valueOf(st *data.Struct, i int, withDefault bool) any {
	if withDefault {
		return fieldAt(st, i)
	}
	return st.GetIndex(i)
}

// mapValueAt returns the value p reaches in m (nil when it reaches
// nothing), or an error when a step crosses a value that is not a map.
func mapValueAt(m map[string]any, p fieldPath) (any, error) {
	for i, step := range p.parent() {
		v := m[step]
		if v == nil {
			return nil, nil
		}
		next, ok := asMap(v)
		if !ok {
			return nil, fmt.Errorf("field %q: %q holds a %T, not a map", p, fieldPath(p[:i+1]), v)
		}
		m = next
	}
	return m[p.last()], nil
}

// structEdit says how a transformation rewrites the fields its paths reach
// in struct schemas.
type structEdit struct {
	trie *pathTrie
	// field returns the field that takes the place of the field f that
	// path reaches, or keep=false to drop it; nil keeps f.
	field func(path fieldPath, f data.Field) (out data.Field, keep bool, err error)
	// missing is called for a path that reaches no field; parentFound tells
	// whether the struct that should hold it exists. It returns a field to
	// append to that struct, or nil; nil leaves the data as it is.
	missing func(path fieldPath, parentFound bool) (*data.Field, error)
	// dropOthers drops the fields no path names (ReplaceField with include,
	// ValueToKey); structs on the way to a named field are kept.
	dropOthers bool
	// anonymous gives the output root struct no name (ValueToKey's new
	// key) instead of the input's name, version and doc.
	anonymous bool
	// pathOrder orders the output fields as the paths name them, not as
	// the input holds them (ValueToKey, with dropOthers).
	pathOrder bool

	plans derivedCache[*structPlan]
}

// structPlan is a rewrite of one struct schema: the output schema and, per
// output field, where its value comes from.
type structPlan struct {
	schema *data.Schema
	fields []planField
}

type planField struct {
	name string       // the input field's name (the path step)
	src  int          // index of the input field; -1 for an appended one
	path fieldPath    // the path that reaches it, when one does
	in   *data.Schema // the input field's schema; nil for an appended one
	sub  *structPlan  // the rewrite of a struct on the way to named fields
}

// plan returns the rewrite of the struct schema in, derived once per
// schema.
func (e *structEdit) plan(in *data.Schema) (*structPlan, error) {
	if e.plans == nil {
		e.plans = derivedCache[*structPlan]{}
	}
	return e.plans.get(in, func(in *data.Schema) (*structPlan, error) {
		p, err := e.planAt(in, e.trie)
		if err == nil && e.anonymous {
			p.schema = data.StructOf("", p.schema.Fields...)
		}
		return p, err
	})
}

func (e *structEdit) planAt(in *data.Schema, n *pathTrie) (*structPlan, error) {
	p := &structPlan{}
	var fields []data.Field
	keep := func(f data.Field, pf planField) {
		fields = append(fields, data.F(f.Name, f.Schema))
		p.fields = append(p.fields, pf)
	}
	for i, f := range in.Fields {
		c := n.next[f.Name]
		switch {
		case c == nil:
			if !e.dropOthers {
				keep(f, planField{name: f.Name, src: i})
			}
		case c.path != nil:
			out, ok := f, true
			if e.field != nil {
				var err error
				if out, ok, err = e.field(c.path, f); err != nil {
					return nil, err
				}
			}
			if ok {
				keep(out, planField{name: f.Name, src: i, path: c.path, in: f.Schema})
			}
		case f.Schema.Type == data.TypeStruct:
			sub, err := e.planAt(f.Schema, c)
			if err != nil {
				return nil, err
			}
			keep(data.F(f.Name, sub.schema), planField{name: f.Name, src: i, sub: sub})
		default: // the paths go on through a field that is no struct
			if err := e.lost(c); err != nil {
				return nil, err
			}
			if !e.dropOthers {
				keep(f, planField{name: f.Name, src: i})
			}
		}
	}
	for _, name := range n.names {
		c := n.next[name]
		if in.Field(name) != nil {
			continue
		}
		if c.path == nil {
			if err := e.lost(c); err != nil {
				return nil, err
			}
			continue
		}
		if e.missing == nil {
			continue
		}
		add, err := e.missing(c.path, true)
		if err != nil {
			return nil, err
		}
		if add != nil {
			keep(*add, planField{name: name, src: -1, path: c.path})
		}
	}
	if e.pathOrder {
		order := make([]int, len(fields))
		for j := range order {
			order[j] = j
		}
		rank := func(j int) int { return slices.Index(n.names, p.fields[j].name) }
		sort.SliceStable(order, func(a, b int) bool { return rank(order[a]) < rank(order[b]) })
		sortedFields, sortedPlan := make([]data.Field, len(order)), make([]planField, len(order))
		for j, k := range order {
			sortedFields[j], sortedPlan[j] = fields[k], p.fields[k]
		}
		fields, p.fields = sortedFields, sortedPlan
	}
	p.schema = structCopy(in, fields)
	return p, nil
}

// lost reports the paths below n, whose parent struct does not exist.
func (e *structEdit) lost(n *pathTrie) error {
	if e.missing == nil {
		return nil
	}
	return n.eachLeaf(func(p fieldPath) error { _, err := e.missing(p, false); return err })
}

// leafFunc returns the new value of the field path reaches: v is its value
// (nil for an appended field), in its schema (nil without a schema or for
// an appended field).
type leafFunc func(path fieldPath, in *data.Schema, v any) (any, error)

// apply rewrites st, whose schema the plan was derived from. leaf may be
// nil to copy the values of the fields paths reach.
func (p *structPlan) apply(st *data.Struct, withDefault bool, leaf leafFunc) (*data.Struct, error) {
	vals := make([]any, len(p.fields))
	for j, pf := range p.fields {
		var v any
		switch {
		case pf.sub != nil:
			if x, _ := fieldAt(st, pf.src).(*data.Struct); x != nil {
				sub, err := pf.sub.apply(x, withDefault, leaf)
				if err != nil {
					return nil, err
				}
				v = sub
			}
		case pf.src >= 0:
			v = valueOf(st, pf.src, withDefault)
		}
		if pf.path != nil && leaf != nil {
			var err error
			if v, err = leaf(pf.path, pf.in, v); err != nil {
				return nil, err
			}
		}
		vals[j] = v
	}
	return data.NewStructTrusted(p.schema, vals), nil
}

// mapEdit says how a transformation rewrites the entries its paths reach
// in schemaless maps.
type mapEdit struct {
	trie *pathTrie
	// entry returns the entry that takes the place of the entry path
	// reaches: its name and value, or keep=false to drop it. nil keeps it.
	entry func(path fieldPath, name string, v any) (newName string, nv any, keep bool, err error)
	// missing is called for a path that reaches no entry; parentFound
	// tells whether the map that should hold it exists. It returns a value
	// to add there and whether to add it; nil leaves the data as it is.
	missing func(path fieldPath, parentFound bool) (any, bool, error)
	// dropOthers drops the entries no path names; maps on the way to a
	// named entry are kept.
	dropOthers bool
}

// apply rewrites m into a new map.
func (e *mapEdit) apply(m map[string]any) (map[string]any, error) { return e.applyAt(m, e.trie) }

func (e *mapEdit) applyAt(m map[string]any, n *pathTrie) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		c := n.next[k]
		switch {
		case c == nil:
			if !e.dropOthers {
				out[k] = v
			}
		case c.path != nil:
			name, nv, keep := k, v, true
			if e.entry != nil {
				var err error
				if name, nv, keep, err = e.entry(c.path, k, v); err != nil {
					return nil, err
				}
			}
			if keep {
				out[name] = nv
			}
		default:
			if sub, ok := asMap(v); ok {
				nv, err := e.applyAt(sub, c)
				if err != nil {
					return nil, err
				}
				out[k] = nv
				continue
			}
			if err := e.lost(c); err != nil {
				return nil, err
			}
			if !e.dropOthers {
				out[k] = v
			}
		}
	}
	for _, name := range n.names {
		if _, ok := m[name]; ok {
			continue
		}
		c := n.next[name]
		if c.path == nil {
			if err := e.lost(c); err != nil {
				return nil, err
			}
			continue
		}
		if e.missing == nil {
			continue
		}
		v, add, err := e.missing(c.path, true)
		if err != nil {
			return nil, err
		}
		if add {
			out[name] = v
		}
	}
	return out, nil
}

// lost reports the paths below n, whose parent map does not exist.
func (e *mapEdit) lost(n *pathTrie) error {
	if e.missing == nil {
		return nil
	}
	return n.eachLeaf(func(p fieldPath) error { _, _, err := e.missing(p, false); return err })
}

// rewrite applies a transformation's edits to the key or value of r: the
// struct edit with a schema, the map edit without; a null stays null.
func rewrite(r *Record, s side, purpose string, se *structEdit, me *mapEdit, withDefault bool, leaf leafFunc) (*Record, error) {
	schema, v := s.get(r)
	if v == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(v, purpose)
		if err != nil {
			return nil, err
		}
		out, err := me.apply(m)
		if err != nil {
			return nil, err
		}
		s.set(r, nil, out)
		return r, nil
	}
	st, err := requireStruct(schema, v, purpose)
	if err != nil {
		return nil, err
	}
	p, err := se.plan(schema)
	if err != nil {
		return nil, err
	}
	out, err := p.apply(st, withDefault, leaf)
	if err != nil {
		return nil, err
	}
	s.set(r, p.schema, out)
	return r, nil
}
