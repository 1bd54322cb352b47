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
	"errors"
	"fmt"
	"strings"
)

// Field paths (KIP-821). Every transformation that names fields of the key
// or value (Cast, ExtractField, HeaderFrom, HoistField, InsertField,
// MaskField, ReplaceField, TimestampConverter, ValueToKey) reads its names
// as paths under the option field.syntax.version:
//
//   - V1 (the default): a name is one field at the root, dots and backticks
//     included, as before KIP-821;
//   - V2: a dotted path into nested structs (or maps, without a schema).
//     A step holding dots is wrapped in backticks (`a.b`.c is the field c of
//     the field "a.b"); a backtick that is part of a wrapped name and comes
//     right before a dot is escaped with a backslash (`x\`.y` is the one
//     field "x`.y"); other backticks and backslashes are plain characters.
//
// This file parses paths; fieldwalk.go reads and rewrites the values they
// reach. Both are the only implementation: V1 names are paths of one step.

// Option names shared by the transformations that take them.
const (
	optFieldSyntaxVersion     = "field.syntax.version"
	optReplaceNullWithDefault = "replace.null.with.default"
)

// fieldPath is a parsed path: the field names from the root down (at
// least one).
type fieldPath []string

// String renders the path for messages: a root field by its name, a
// nested one in V2 syntax, wrapping steps that hold dots.
func (p fieldPath) String() string {
	if len(p) == 1 {
		return p[0]
	}
	parts := make([]string, len(p))
	for i, s := range p {
		if strings.Contains(s, ".") || s == "" {
			s = "`" + strings.ReplaceAll(s, "`.", "\\`.") + "`"
		}
		parts[i] = s
	}
	return strings.Join(parts, ".")
}

// key is a map key for the path, unambiguous for any field names.
func (p fieldPath) key() string { return strings.Join(p, "\x00") }

// parent is the path without its last step (nil for a root field).
func (p fieldPath) parent() fieldPath { return p[:len(p)-1] }

// last is the name of the field the path reaches.
func (p fieldPath) last() string { return p[len(p)-1] }

// parseFieldPath parses text as a V2 path when v2 is set, or as a single
// field name (V1). The errors say where the text goes wrong and how to fix
// it.
func parseFieldPath(text string, v2 bool) (fieldPath, error) {
	if !v2 {
		return fieldPath{text}, nil
	}
	var steps fieldPath
	i := 0
	for {
		if i < len(text) && text[i] == '`' {
			name, next, err := wrappedStep(text, i)
			if err != nil {
				return nil, err
			}
			steps = append(steps, name)
			i = next
		} else {
			end := strings.IndexByte(text[i:], '.')
			if end < 0 {
				end = len(text) - i
			}
			if end == 0 {
				return nil, fmt.Errorf("path %q has an empty field name at position %d: remove the stray dot, or write `` for a field whose name is empty", text, i)
			}
			steps = append(steps, text[i:i+end])
			i += end
		}
		if i == len(text) {
			return steps, nil
		}
		// text[i] is the dot after a step.
		i++
		if i == len(text) {
			return nil, fmt.Errorf("path %q ends with a dot: remove it, or write `` for a last field whose name is empty", text)
		}
	}
}

// wrappedStep reads the backtick-wrapped step that opens at text[open]; it
// returns the name and the index just after the closing backtick (the end
// of text, or a dot). A backtick closes the step only when a dot or the end
// of the text follows it and no backslash precedes it; an escaped one that
// a dot follows stands for a backtick in the name.
func wrappedStep(text string, open int) (string, int, error) {
	var name strings.Builder
	start := open + 1
	for i := open + 1; i < len(text); i++ {
		if text[i] != '`' {
			continue
		}
		atEnd := i == len(text)-1
		if !atEnd && text[i+1] != '.' {
			continue // part of the name
		}
		if text[i-1] == '\\' {
			if atEnd {
				break // an escaped backtick cannot close the step
			}
			name.WriteString(text[start : i-1])
			name.WriteByte('`')
			start = i + 1
			continue
		}
		name.WriteString(text[start:i])
		return name.String(), i + 1, nil
	}
	return "", 0, fmt.Errorf("path %q opens a backtick at position %d that nothing closes: close it before the next dot or at the end, or put a backslash before a backtick that is part of the name", text, open)
}

// syntaxV2 reads field.syntax.version: false for V1 (the default), true for
// V2.
func (o *Options) syntaxV2() bool {
	return o.OneOf(optFieldSyntaxVersion, "V1", "V1", "V2") == "V2"
}

// path reads an option naming one field as a path in the syntax v2 selects;
// a malformed path is a problem of that option. It returns nil when the
// option is not set.
func (o *Options) path(name string, v2 bool) fieldPath {
	text, ok := o.raw(name)
	if !ok {
		return nil
	}
	p, err := parseFieldPath(text, v2)
	if err != nil {
		o.Fail(name, "%v", err)
	}
	return p
}

// paths parses a list of field paths read from the option named name.
func (o *Options) paths(name string, items []string, v2 bool) []fieldPath {
	out := make([]fieldPath, 0, len(items))
	for _, s := range items {
		p, err := parseFieldPath(s, v2)
		if err != nil {
			o.Fail(name, "%v", err)
			continue
		}
		out = append(out, p)
	}
	return out
}

// errOverlap reports two paths of which one reaches into the other.
var errOverlap = errors.New("overlap")

// pathTrie holds the paths a transformation acts on, as a tree of field
// names; a node is either a leaf (a path ends there) or has children. The
// children keep the order in which paths were added, so that fields a
// transformation appends come out in the order of its options.
type pathTrie struct {
	path  fieldPath // set on a leaf
	names []string
	next  map[string]*pathTrie
}

// newPathTrie builds the tree of paths. A path given twice counts once; a
// path that reaches into another (a and a.b) is an error naming both.
func newPathTrie(paths []fieldPath) (*pathTrie, error) {
	root := &pathTrie{}
	for _, p := range paths {
		n := root
		for i, step := range p {
			if n.path != nil {
				return nil, fmt.Errorf("%w: %q reaches into %q; name the nested fields or the whole field, not both", errOverlap, p, n.path)
			}
			c := n.next[step]
			if c == nil {
				if n.next == nil {
					n.next = map[string]*pathTrie{}
				}
				c = &pathTrie{}
				n.next[step] = c
				n.names = append(n.names, step)
			}
			n = c
			if i == len(p)-1 {
				if len(n.names) > 0 {
					return nil, fmt.Errorf("%w: %q holds other named fields (%q...); name the nested fields or the whole field, not both", errOverlap, p, n.names[0])
				}
				n.path = p
			}
		}
	}
	return root, nil
}

// eachLeaf calls fn with the paths that end at or below n, in order,
// until it fails.
func (n *pathTrie) eachLeaf(fn func(fieldPath) error) error {
	if n.path != nil {
		return fn(n.path)
	}
	for _, name := range n.names {
		if err := n.next[name].eachLeaf(fn); err != nil {
			return err
		}
	}
	return nil
}

// trieOption builds the tree of paths of a transformation, reporting an
// overlap as a problem of the option named name.
func (o *Options) trieOption(name string, paths []fieldPath) *pathTrie {
	t, err := newPathTrie(paths)
	if err != nil {
		o.Fail(name, "%v", err)
		return &pathTrie{}
	}
	return t
}

// syntaxOption and nullDefaultOption document the two options of KIP-821
// and KIP-1040 on the transformations that take them.
var (
	syntaxOption = Option{Name: optFieldSyntaxVersion, Default: "V1",
		Doc: "V1: field names are names at the root; V2: they are dotted paths into nested structs and maps, with backticks around a name that holds dots (`a.b`.c) and a backslash before a backtick that ends such a name (KIP-821)."}
	nullDefaultOption = Option{Name: optReplaceNullWithDefault, Type: "BOOLEAN", Default: "true",
		Doc: "true: a null field with a schema default reads as the default; false: it stays null (KIP-1040)."}
)

// nullDefault reads replace.null.with.default.
func (o *Options) nullDefault() bool { return o.Bool(optReplaceNullWithDefault, true) }
