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
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

type replaceField struct {
	side             side
	exclude, include map[string]bool
	renames          map[string]string
	cache            schemaCache
}

func (t *replaceField) keep(name string) bool {
	return !t.exclude[name] && (len(t.include) == 0 || t.include[name])
}

func (t *replaceField) rename(name string) string {
	if n, ok := t.renames[name]; ok {
		return n
	}
	return name
}

func (t *replaceField) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if v == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(v, "ReplaceField")
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			if t.keep(k) {
				out[t.rename(k)] = x
			}
		}
		t.side.set(r, nil, out)
		return r, nil
	}
	st, err := requireStruct(schema, v, "ReplaceField")
	if err != nil {
		return nil, err
	}
	ns, _ := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
		var fields []data.Field
		for _, f := range in.Fields {
			if t.keep(f.Name) {
				fields = append(fields, data.F(t.rename(f.Name), f.Schema))
			}
		}
		return structCopy(in, fields), nil
	})
	vals := make([]any, 0, len(ns.Fields))
	for i, f := range schema.Fields {
		if t.keep(f.Name) {
			vals = append(vals, fieldAt(st, i))
		}
	}
	t.side.set(r, ns, data.NewStructTrusted(ns, vals))
	return r, nil
}

func newReplaceField(o *Options, s side) Transformation {
	t := &replaceField{side: s, exclude: map[string]bool{}, include: map[string]bool{}, renames: map[string]string{}, cache: schemaCache{}}
	for _, f := range o.List("exclude", "blacklist") {
		t.exclude[f] = true
	}
	for _, f := range o.List("include", "whitelist") {
		t.include[f] = true
	}
	for _, p := range o.List("renames") {
		from, to, ok := strings.Cut(p, ":")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			o.Fail("renames", "%q is not of the form old:new", p)
			continue
		}
		t.renames[from] = to
	}
	return t
}

// ---- MaskField ----

func init() {
	registerBoth("ReplaceField", "Keeps, drops and renames fields",
		[]Option{
			{Name: "exclude", Type: "LIST", Doc: "Fields to drop (old name: blacklist)."},
			{Name: "include", Type: "LIST", Doc: "Fields to keep; empty keeps all (old name: whitelist)."},
			{Name: "renames", Type: "LIST", Doc: "Renames as old:new pairs, comma-separated."},
			{Name: "blacklist", Type: "LIST", Doc: "Old name of exclude."},
			{Name: "whitelist", Type: "LIST", Doc: "Old name of include."},
		}, newReplaceField)
}
