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
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/properties"
)

// Configuration keys of the chain (Kafka Connect's, KIP-585 for predicates).
const (
	KeyTransforms = "transforms"
	KeyPredicates = "predicates"
	// Suffixes under "transforms.<alias>." and "predicates.<alias>.".
	SuffixType      = "type"
	SuffixPredicate = "predicate"
	SuffixNegate    = "negate"
)

// FieldError is a problem with one configuration key.
type FieldError struct {
	Name    string
	Message string
}

func (e FieldError) Error() string { return e.Name + ": " + e.Message }

// Chain is the ordered transformations of a connector, each with its
// optional predicate. A nil *Chain has no transformations. A Chain keeps
// caches (derived schemas, routed topics) and is not safe for concurrent
// use: each task runner builds its own.
type Chain struct {
	steps []step
}

type step struct {
	alias  string
	class  string // the transformation's type ("" for one added with Then)
	t      Transformation
	pred   Predicate
	negate bool
}

// Len returns the number of transformations.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.steps)
}

// Then returns a chain that runs c's steps (c may be nil) and then t on
// every record they keep; c is not changed. t's errors name alias.
func (c *Chain) Then(alias string, t Transformation) *Chain {
	out := &Chain{}
	if c != nil {
		out.steps = slices.Clone(c.steps)
	}
	out.steps = append(out.steps, step{alias: alias, t: t})
	return out
}

// New builds the chain a connector configuration asks for; nil (and no
// error) when it lists no transforms. Extra keys are ignored. The error
// names every bad key (see [Validate]).
func New(config map[string]string) (*Chain, error) {
	c, errs := build(config)
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Message
		}
		return nil, fmt.Errorf("invalid transforms configuration: %s", strings.Join(msgs, "; "))
	}
	if c.Len() == 0 {
		return nil, nil
	}
	return c, nil
}

// Validate checks the transforms and predicates of a connector
// configuration and returns one error per bad key: a listed alias without
// a type or with an unknown one, missing or bad options
// ("transforms.<alias>.<option>"), a predicate alias that "predicates"
// does not list.
func Validate(config map[string]string) []FieldError {
	_, errs := build(config)
	return errs
}

func build(config map[string]string) (*Chain, []FieldError) {
	var errs []FieldError
	// Messages start with the key: the herder's refusal lists messages
	// without their keys.
	fail := func(key, format string, args ...any) {
		errs = append(errs, FieldError{Name: key, Message: key + ": " + fmt.Sprintf(format, args...)})
	}
	preds := map[string]Predicate{}
	for _, alias := range aliases(config, KeyPredicates, fail) {
		prefix := KeyPredicates + "." + alias + "."
		typeKey := prefix + SuffixType
		name := strings.TrimSpace(config[typeKey])
		if name == "" {
			fail(typeKey, "predicate %q is listed in %s but has no type: set %s to one of %s", alias, KeyPredicates, typeKey, knownPredicateNames())
			continue
		}
		pt := predicateTypes[name]
		if pt == nil {
			fail(typeKey, "unknown predicate type %q: use one of %s", name, knownPredicateNames())
			continue
		}
		o := NewOptions(sub(config, prefix, SuffixType))
		p := pt.New(o)
		o.checkKnown(pt.Options)
		for _, e := range o.Errors() {
			fail(prefix+e.Option, "predicate %q (%s): %s", alias, pt.Aliases[0], e.Message)
		}
		if len(o.Errors()) == 0 {
			preds[alias] = p
		}
	}
	c := &Chain{}
	for _, alias := range aliases(config, KeyTransforms, fail) {
		prefix := KeyTransforms + "." + alias + "."
		typeKey := prefix + SuffixType
		st := step{alias: alias}
		if pa := strings.TrimSpace(config[prefix+SuffixPredicate]); pa != "" {
			p, ok := preds[pa]
			if !ok && !listed(config, pa) {
				fail(prefix+SuffixPredicate, "transform %q refers to predicate %q, which %s does not list: add it there with a %s.%s.type", alias, pa, KeyPredicates, KeyPredicates, pa)
			}
			st.pred = p
		}
		if raw, ok := config[prefix+SuffixNegate]; ok && strings.TrimSpace(raw) != "" {
			switch strings.ToLower(strings.TrimSpace(raw)) {
			case "true":
				st.negate = true
			case "false":
			default:
				fail(prefix+SuffixNegate, "%q is not a boolean: use true or false", raw)
			}
			if st.negate && strings.TrimSpace(config[prefix+SuffixPredicate]) == "" {
				fail(prefix+SuffixNegate, "transform %q sets negate without a predicate: set %s too", alias, prefix+SuffixPredicate)
			}
		}
		name := strings.TrimSpace(config[typeKey])
		if name == "" {
			fail(typeKey, "transform %q is listed in %s but has no type: set %s to one of %s", alias, KeyTransforms, typeKey, knownTransformNames())
			continue
		}
		tt := transformTypes[name]
		if tt == nil {
			fail(typeKey, "unknown transform type %q: use one of %s (or their org.apache.kafka.connect.transforms class names)", name, knownTransformNames())
			continue
		}
		o := NewOptions(sub(config, prefix, SuffixType, SuffixPredicate, SuffixNegate))
		st.class = tt.Class
		st.t = tt.New(o)
		o.checkKnown(tt.Options)
		for _, e := range o.Errors() {
			fail(prefix+e.Option, "transform %q (%s): %s", alias, shortName(tt), e.Message)
		}
		c.steps = append(c.steps, st)
	}
	return c, errs
}

func shortName(t *TransformType) string {
	if len(t.Aliases) > 0 {
		return t.Aliases[0]
	}
	return t.Class
}

// listed reports whether the predicates list names alias (its type may
// still be bad; that error is reported on the type key).
func listed(config map[string]string, alias string) bool {
	for _, a := range properties.SplitList(config[KeyPredicates]) {
		if a == alias {
			return true
		}
	}
	return false
}

// aliases returns the aliases listed under key, reporting duplicates.
func aliases(config map[string]string, key string, fail func(key, format string, args ...any)) []string {
	list := properties.SplitList(config[key])
	seen := map[string]bool{}
	out := list[:0:0]
	for _, a := range list {
		if seen[a] {
			fail(key, "alias %q is listed twice: each alias must be unique", a)
			continue
		}
		seen[a] = true
		out = append(out, a)
	}
	return out
}

// sub returns the keys under prefix, prefix stripped, without the reserved
// suffixes.
func sub(config map[string]string, prefix string, reserved ...string) map[string]string {
	out := map[string]string{}
	for k, v := range config {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		skip := false
		for _, r := range reserved {
			if rest == r {
				skip = true
			}
		}
		if !skip {
			out[rest] = v
		}
	}
	return out
}

// Error is a transformation that failed on a record. Its message names the
// alias and where the record is, never the record's values.
type Error struct {
	Alias string
	// Type is the transformation's class, for example
	// org.apache.kafka.connect.transforms.Cast$Value.
	Type string
	// Where locates the record: "topic-partition@offset" for a sink
	// record, "a record for topic T" for a source record.
	Where string
	Err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("transform %q failed on %s: %v", e.Alias, e.Where, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// apply runs the steps on r; a panic in a step is an error of that step,
// the failing one.
func (c *Chain) apply(r *Record) (out *Record, failed *step, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("panic: %v", v)
		}
	}()
	for i := range c.steps {
		failed = &c.steps[i]
		if failed.pred != nil && failed.pred.Test(r) == failed.negate {
			continue
		}
		next, err := failed.t.Apply(r)
		if err != nil {
			return nil, failed, err
		}
		if next == nil {
			return nil, nil, nil
		}
		r = next
	}
	return r, nil, nil
}

// ApplySource transforms a source record: it returns a new record (rec is
// left as it is, so the task's CommitRecord gets what it returned), or nil
// when a transformation dropped it. A record without a timestamp is
// stamped with now first, the time the runner gives records without one.
func (c *Chain) ApplySource(rec *data.SourceRecord, now time.Time) (*data.SourceRecord, error) {
	r := &Record{Topic: rec.Topic, Partition: rec.Partition, Offset: -1,
		KeySchema: rec.KeySchema, Key: rec.Key, ValueSchema: rec.ValueSchema, Value: rec.Value,
		Timestamp: rec.Timestamp, Headers: rec.Headers}
	if r.Timestamp.IsZero() {
		r.Timestamp = now
	}
	out, failed, err := c.apply(r)
	if err != nil {
		where := "a record for topic " + rec.Topic
		if rec.Partition != nil {
			where = fmt.Sprintf("a record for topic %s partition %d", rec.Topic, *rec.Partition)
		}
		return nil, &Error{Alias: failed.alias, Type: failed.class, Where: where, Err: err}
	}
	if out == nil {
		return nil, nil
	}
	res := *rec
	res.Topic, res.Partition = out.Topic, out.Partition
	res.KeySchema, res.Key, res.ValueSchema, res.Value = out.KeySchema, out.Key, out.ValueSchema, out.Value
	res.Timestamp, res.Headers = out.Timestamp, out.Headers
	return &res, nil
}

// ApplySink transforms a sink record in place and reports whether it is
// kept (false: a transformation dropped it). The record's Kafka position
// (Offset) stays; Topic and Partition may change.
func (c *Chain) ApplySink(rec *data.SinkRecord) (bool, error) {
	part := rec.Partition
	r := &Record{Topic: rec.Topic, Partition: &part, Offset: rec.Offset, Sink: true,
		KeySchema: rec.KeySchema, Key: rec.Key, ValueSchema: rec.ValueSchema, Value: rec.Value,
		Timestamp: rec.Timestamp, Headers: rec.Headers}
	out, failed, err := c.apply(r)
	if err != nil {
		return false, &Error{Alias: failed.alias, Type: failed.class, Where: fmt.Sprintf("the record at %s-%d@%d", rec.Topic, rec.Partition, rec.Offset), Err: err}
	}
	if out == nil {
		return false, nil
	}
	rec.Topic = out.Topic
	if out.Partition != nil {
		rec.Partition = *out.Partition
	}
	rec.KeySchema, rec.Key, rec.ValueSchema, rec.Value = out.KeySchema, out.Key, out.ValueSchema, out.Value
	rec.Timestamp, rec.Headers = out.Timestamp, out.Headers
	return true, nil
}
