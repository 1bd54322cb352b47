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

// Package transforms implements Kafka Connect's single message transforms
// (SMTs) and predicates (KIP-585) on runtime/data records.
//
// A connector configuration names the transformations to apply, in order,
// under "transforms" (a list of aliases); each alias has a type
// ("transforms.<alias>.type", a Kafka class name such as
// org.apache.kafka.connect.transforms.InsertField$Value or a short name such
// as InsertField$Value) and its own options under "transforms.<alias>.".
// A transformation may be guarded by a predicate
// ("transforms.<alias>.predicate", an alias listed under "predicates", and
// "transforms.<alias>.negate"). [New] builds the [Chain] a task runner
// applies to every record; [Validate] reports configuration problems per
// key, for connector creation and the REST validate endpoint.
//
// The package depends only on runtime/data, so the plugin package can call
// [Validate] without an import cycle.
package transforms

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/properties"
)

// Record is the view of a record that transformations read and change. The
// chain builds it from a source or sink record and writes the result back;
// the source partition and offset of a source record, and the Kafka
// position a sink record was read from, are not part of it and never
// change.
//
// A transformation may change the fields of the Record it is given and
// return it, but must not change the values it points to (structs, maps,
// slices, headers): those may be shared with the connector's task. Build
// new values instead, and clone Headers before changing them.
type Record struct {
	// Topic is the record's topic.
	Topic string
	// Partition is the Kafka partition: nil for a source record that lets
	// the producer choose.
	Partition *int32
	// Offset is the Kafka offset of a sink record; -1 for a source record.
	Offset int64
	// Sink tells a sink record (read from Kafka) from a source record.
	Sink bool
	// KeySchema and Key are the key; ValueSchema and Value the value (a nil
	// Value is a tombstone).
	KeySchema   *data.Schema
	Key         any
	ValueSchema *data.Schema
	Value       any
	// Timestamp is the record timestamp; zero when unknown.
	Timestamp time.Time
	// Headers are the record headers.
	Headers data.Headers
}

// Transformation changes one record at a time.
type Transformation interface {
	// Apply returns the transformed record (usually r itself, changed), or
	// nil to drop the record. The error must not quote record values: it
	// ends up in logs and the task's status.
	Apply(r *Record) (*Record, error)
}

// Predicate tells whether a transformation applies to a record.
type Predicate interface {
	Test(r *Record) bool
}

// TransformFunc adapts a function to Transformation.
type TransformFunc func(r *Record) (*Record, error)

// Apply implements Transformation.
func (f TransformFunc) Apply(r *Record) (*Record, error) { return f(r) }

// PredicateFunc adapts a function to Predicate.
type PredicateFunc func(r *Record) bool

// Test implements Predicate.
func (f PredicateFunc) Test(r *Record) bool { return f(r) }

// Option describes one configuration option of a transformation or
// predicate, for documentation.
type Option struct {
	Name string
	// Type is the option's type as Kafka's ConfigDef names it (STRING,
	// LIST, BOOLEAN, INT); empty means STRING.
	Type     string
	Default  string
	Required bool
	Doc      string
}

// OptionType is the option's type, STRING unless set.
func (o Option) OptionType() string {
	if o.Type == "" {
		return "STRING"
	}
	return o.Type
}

// TransformType is a registered transformation: its class name, short
// names, options and constructor.
type TransformType struct {
	// Class is the full class name, Kafka's where Kafka has the transform.
	Class string
	// Aliases are short names accepted in place of Class.
	Aliases []string
	// Doc says what the transformation does.
	Doc string
	// Options documents the options.
	Options []Option
	// New builds a transformation from its options (prefix stripped). It
	// reports bad options through o; the returned value is ignored when o
	// holds errors.
	New func(o *Options) Transformation
}

// PredicateType is a registered predicate.
type PredicateType struct {
	Class   string
	Aliases []string
	Doc     string
	Options []Option
	New     func(o *Options) Predicate
}

var (
	transformTypes = map[string]*TransformType{}
	predicateTypes = map[string]*PredicateType{}
	transformList  []*TransformType
	predicateList  []*PredicateType
)

// registerTransform adds a transformation type under its class and aliases.
func registerTransform(t *TransformType) {
	for _, n := range append([]string{t.Class}, t.Aliases...) {
		if _, dup := transformTypes[n]; dup {
			panic("transforms: type " + n + " registered twice")
		}
		transformTypes[n] = t
	}
	transformList = append(transformList, t)
}

// registerPredicate adds a predicate type under its class and aliases.
func registerPredicate(p *PredicateType) {
	for _, n := range append([]string{p.Class}, p.Aliases...) {
		if _, dup := predicateTypes[n]; dup {
			panic("transforms: predicate " + n + " registered twice")
		}
		predicateTypes[n] = p
	}
	predicateList = append(predicateList, p)
}

// OptionsOf returns the options of the transformation or predicate with
// the class or alias name; ok is false when there is none.
func OptionsOf(name string) (opts []Option, ok bool) {
	if t, found := transformTypes[name]; found {
		return t.Options, true
	}
	if p, found := predicateTypes[name]; found {
		return p.Options, true
	}
	return nil, false
}

// Transforms returns the registered transformation types, sorted by class.
func Transforms() []*TransformType {
	out := slices.Clone(transformList)
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}

// Predicates returns the registered predicate types, sorted by class.
func Predicates() []*PredicateType {
	out := slices.Clone(predicateList)
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}

// knownNames lists the short names (or classes) of the types, for error
// messages.
func knownTransformNames() string {
	var names []string
	for _, t := range Transforms() {
		if len(t.Aliases) > 0 {
			names = append(names, t.Aliases[0])
		} else {
			names = append(names, t.Class)
		}
	}
	return strings.Join(names, ", ")
}

func knownPredicateNames() string {
	var names []string
	for _, p := range Predicates() {
		names = append(names, p.Aliases[0])
	}
	return strings.Join(names, ", ")
}

// OptionError is a problem with one option of a transformation or
// predicate.
type OptionError struct {
	// Option is the option name without the alias prefix.
	Option  string
	Message string
}

func (e OptionError) Error() string { return e.Option + ": " + e.Message }

// Options are the options of one transformation or predicate (the keys
// under its "transforms.<alias>." prefix, prefix stripped). Its getters
// collect problems instead of returning errors, so a constructor reads
// every option and all problems are reported at once.
type Options struct {
	values map[string]string
	errs   []OptionError
}

// NewOptions wraps options (prefix stripped).
func NewOptions(values map[string]string) *Options { return &Options{values: values} }

// Errors returns the problems found so far.
func (o *Options) Errors() []OptionError { return o.errs }

// Fail records a problem with an option.
func (o *Options) Fail(option, format string, args ...any) {
	o.errs = append(o.errs, OptionError{Option: option, Message: fmt.Sprintf(format, args...)})
}

// raw returns the trimmed value of an option and whether it is set
// (non-blank).
func (o *Options) raw(name string) (string, bool) {
	v, ok := o.values[name]
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// String returns an option, or def when it is not set.
func (o *Options) String(name, def string) string {
	if v, ok := o.raw(name); ok {
		return v
	}
	return def
}

// Required returns an option that must be set.
func (o *Options) Required(name string) string {
	v, ok := o.raw(name)
	if !ok {
		o.Fail(name, "missing required option %q: set it", name)
	}
	return v
}

// List returns a comma-separated option as its items (blanks trimmed,
// empty items dropped); the first of names that is set wins, so an old
// name can stand in for a new one.
func (o *Options) List(names ...string) []string {
	for _, n := range names {
		if v, ok := o.raw(n); ok {
			return properties.SplitList(v)
		}
	}
	return nil
}

// RequiredList is List for an option that must name at least one item.
func (o *Options) RequiredList(name string) []string {
	l := o.List(name)
	if len(l) == 0 {
		o.Fail(name, "missing required option %q: set a comma-separated list", name)
	}
	return l
}

// Int returns an integer option, or def. Every integer option has an
// upper bound, max, as every number key of a connector has (its
// ConfigField.Max): a larger value is a problem naming the option and the
// bound.
func (o *Options) Int(name string, def, max int) int {
	v, ok := o.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		o.Fail(name, "%q is not an integer", v)
	}
	if n > max {
		o.Fail(name, "%d is above %d, the upper bound of %s", n, max, name)
	}
	return n
}

// Bool returns a boolean option, or def.
func (o *Options) Bool(name string, def bool) bool {
	v, ok := o.raw(name)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "true":
		return true
	case "false":
		return false
	}
	o.Fail(name, "%q is not a boolean: use true or false", v)
	return def
}

// OneOf returns an option that must be one of values (case-insensitive;
// the canonical spelling is returned), or def.
func (o *Options) OneOf(name, def string, values ...string) string {
	v, ok := o.raw(name)
	if !ok {
		return def
	}
	for _, x := range values {
		if strings.EqualFold(v, x) {
			return x
		}
	}
	o.Fail(name, "%q is not one of %s", v, strings.Join(values, ", "))
	return def
}

// checkKnown reports every option that is not in opts. Two options of
// Kafka's newer transforms are accepted on the others only where they change
// nothing, as Kafka ignores them there: replace.null.with.default=true and
// field.syntax.version=V1.
func (o *Options) checkKnown(opts []Option) {
	var names []string
	for _, x := range opts {
		names = append(names, x.Name)
	}
	for _, k := range slices.Sorted(maps.Keys(o.values)) {
		v := strings.TrimSpace(o.values[k])
		switch {
		case slices.Contains(names, k):
		case k == optReplaceNullWithDefault:
			if !strings.EqualFold(v, "true") {
				o.Fail(k, "this transformation copies no fields with defaults, so only true is accepted; "+
					"Cast, ExtractField, HeaderFrom, InsertField, MaskField, ReplaceField, SetSchemaMetadata, TimestampConverter and ValueToKey take false")
			}
		case k == optFieldSyntaxVersion:
			if !strings.EqualFold(v, "V1") {
				o.Fail(k, "this transformation names no fields, so only V1 is accepted; "+
					"Cast, ExtractField, HeaderFrom, HoistField, InsertField, MaskField, ReplaceField, TimestampConverter and ValueToKey take V2")
			}
		default:
			known := "none"
			if len(names) > 0 {
				known = strings.Join(names, ", ")
			}
			o.Fail(k, "unknown option %q (options: %s)", k, known)
		}
	}
}
