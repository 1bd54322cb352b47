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
	"math"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

type setSchemaMetadata struct {
	side        side
	name        string
	version     int
	withDefault bool
	cache       schemaCache
}

func (t *setSchemaMetadata) Apply(r *Record) (*Record, error) {
	schema, v := t.side.get(r)
	if schema == nil {
		return nil, fmt.Errorf("SetSchemaMetadata needs a %s schema; the record has none", t.side)
	}
	ns, _ := t.cache.get(schema, func(in *data.Schema) (*data.Schema, error) {
		c := *in
		if t.name != "" {
			c.Name = t.name
		}
		if t.version != 0 {
			c.Version = int32(t.version)
		}
		return &c, nil
	})
	if st, ok := v.(*data.Struct); ok && ns.Type == data.TypeStruct {
		vals := make([]any, len(ns.Fields))
		for i := range vals {
			vals[i] = valueOf(st, i, t.withDefault)
		}
		v = data.NewStructTrusted(ns, vals)
	}
	t.side.set(r, ns, v)
	return r, nil
}

func init() {
	registerBoth("SetSchemaMetadata", "Sets the name and/or version of the schema",
		[]Option{{Name: "schema.name", Doc: "Schema name to set."}, {Name: "schema.version", Type: "INT", Doc: "Schema version to set."},
			nullDefaultOption},
		func(o *Options, s side) Transformation {
			t := &setSchemaMetadata{side: s, name: o.String("schema.name", ""), version: o.Int("schema.version", 0, math.MaxInt32),
				withDefault: o.nullDefault(), cache: schemaCache{}}
			if t.name == "" && t.version == 0 && len(o.Errors()) == 0 {
				o.Fail("schema.name", "set schema.name, schema.version or both")
			}
			return t
		})
}
