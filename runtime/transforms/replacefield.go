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

// replaceField keeps, drops and renames fields. With V2 paths, exclude and
// include reach into nested structs (include=a.b keeps only b in a, and
// only a at the root), and a rename names the field at its own level
// (renames=a.b:c makes a.c).
type replaceField struct {
	side             side
	exclude, include map[string]bool   // by path key
	renames          map[string]string // path key to the new name
	withDefault      bool
	structs          structEdit
	maps             mapEdit
}

func (t *replaceField) keep(p fieldPath) bool {
	return !t.exclude[p.key()] && (len(t.include) == 0 || t.include[p.key()])
}

func (t *replaceField) rename(p fieldPath) string {
	if n, ok := t.renames[p.key()]; ok {
		return n
	}
	return p.last()
}

func (t *replaceField) Apply(r *Record) (*Record, error) {
	return rewrite(r, t.side, "ReplaceField", &t.structs, &t.maps, t.withDefault, nil)
}

func newReplaceField(o *Options, s side) Transformation {
	t := &replaceField{side: s, exclude: map[string]bool{}, include: map[string]bool{}, renames: map[string]string{},
		withDefault: o.nullDefault()}
	v2 := o.syntaxV2()
	// The paths of the three options form one tree; an overlap is a
	// problem of the option whose path makes it.
	var all []fieldPath
	overlap := false
	add := func(option string, p fieldPath) {
		all = append(all, p)
		if _, err := newPathTrie(all); err != nil && !overlap {
			overlap = true
			o.Fail(option, "%v", err)
		}
	}
	for _, p := range o.paths("exclude", o.List("exclude", "blacklist"), v2) {
		t.exclude[p.key()] = true
		add("exclude", p)
	}
	for _, p := range o.paths("include", o.List("include", "whitelist"), v2) {
		t.include[p.key()] = true
		add("include", p)
	}
	for _, pair := range o.List("renames") {
		// The new name follows the last colon: a V2 path may hold colons.
		cut := strings.Index(pair, ":")
		if v2 {
			cut = strings.LastIndex(pair, ":")
		}
		var from, to string
		if cut >= 0 {
			from, to = strings.TrimSpace(pair[:cut]), strings.TrimSpace(pair[cut+1:])
		}
		if from == "" || to == "" {
			o.Fail("renames", "%q is not of the form old:new", pair)
			continue
		}
		p, err := parseFieldPath(from, v2)
		if err != nil {
			o.Fail("renames", "%q: %v", pair, err)
			continue
		}
		t.renames[p.key()] = to
		add("renames", p)
	}
	trie, err := newPathTrie(all)
	if err != nil {
		trie = &pathTrie{} // reported above
	}
	dropOthers := len(t.include) > 0
	t.structs = structEdit{trie: trie, dropOthers: dropOthers, field: func(p fieldPath, f data.Field) (data.Field, bool, error) {
		return data.F(t.rename(p), f.Schema), t.keep(p), nil
	}}
	t.maps = mapEdit{trie: trie, dropOthers: dropOthers, entry: func(p fieldPath, _ string, v any) (string, any, bool, error) {
		return t.rename(p), v, t.keep(p), nil
	}}
	return t
}

// ---- MaskField ----

func init() {
	registerBoth("ReplaceField", "Keeps, drops and renames fields",
		[]Option{
			{Name: "exclude", Type: "LIST", Doc: "Fields to drop (old name: blacklist)."},
			{Name: "include", Type: "LIST", Doc: "Fields to keep; empty keeps all (old name: whitelist)."},
			{Name: "renames", Type: "LIST", Doc: "Renames as old:new pairs, comma-separated; with V2, old is a path and new a name at its level."},
			{Name: "blacklist", Type: "LIST", Doc: "Old name of exclude."},
			{Name: "whitelist", Type: "LIST", Doc: "Old name of include."},
			syntaxOption, nullDefaultOption,
		}, newReplaceField)
}
