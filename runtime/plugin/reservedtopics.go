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

package plugin

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// InternalTopicPrefix starts the names of Kafka's own internal topics
// (__consumer_offsets, __transaction_state) and of topics that tools keep
// for themselves: no connector reads or writes them.
const InternalTopicPrefix = "__"

// ReservedTopics are the topics no connector may name, read or write: the
// worker cluster's config, offset and status storage topics (writing into
// the config topic would create or reconfigure other teams' connectors;
// reading the offset and status topics shows every connector's state) and
// every topic starting with [InternalTopicPrefix]. The runtime checks them
// in validation (every topic key, see [ReservedTopics.Validate]) and again
// where records cross into Kafka: a source record's topic after its
// transforms, a dead letter queue, a sink's subscription. A nil
// ReservedTopics reserves nothing.
type ReservedTopics struct {
	storage []string
}

// NewReservedTopics reserves the given storage topics and every "__" topic.
func NewReservedTopics(storage ...string) *ReservedTopics {
	r := &ReservedTopics{}
	for _, t := range storage {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(r.storage, t) {
			r.storage = append(r.storage, t)
		}
	}
	return r
}

// Reserved reports whether topic is off limits to connectors.
func (r *ReservedTopics) Reserved(topic string) bool {
	return r != nil && (strings.HasPrefix(topic, InternalTopicPrefix) || slices.Contains(r.storage, topic))
}

// ExcludePatterns are regular expressions matching every reserved topic,
// for a regex subscription to leave them out (kgo.ConsumeExcludeTopics).
func (r *ReservedTopics) ExcludePatterns() []string {
	if r == nil {
		return nil
	}
	out := []string{"^" + regexp.QuoteMeta(InternalTopicPrefix) + ".*$"}
	for _, t := range r.storage {
		out = append(out, "^"+regexp.QuoteMeta(t)+"$")
	}
	return out
}

// reservedHint ends every refusal: what the rule is and what to do.
const reservedHint = "the cluster's config, offset and status topics and topics starting with \"__\" are off limits to connectors: choose another topic"

// RecordError is the error of a record that would cross into a reserved
// topic at run time (a topic.prefix or a transform such as RegexRouter
// chose it).
func (r *ReservedTopics) RecordError(topic string) error {
	return fmt.Errorf("a record is routed to topic %q (by the connector's topic, topic.prefix or a transform such as RegexRouter); %s", topic, reservedHint)
}

// KeyError is the error of a config key naming a reserved topic.
func (r *ReservedTopics) KeyError(key, topic string) error {
	return fmt.Errorf("%s names topic %q; %s", key, topic, reservedHint)
}

// probes are names a topics.regex is tried against, besides the storage
// topics, to tell whether it reaches "__" topics.
var probes = []string{"__consumer_offsets", "__transaction_state"}

// Validate returns an error for every config key that names, matches or
// routes to a reserved topic: topic and topics keys (topic, topics,
// *.topic, *.topics, *.topic.name: the dead letter queue's, a connector's
// own offsets.storage.topic), topics.regex when it matches a storage topic
// or a "__" topic, *.topic.prefix starting with "__", and the literal part
// of a RegexRouter's replacement or a TimestampRouter's topic.format. What
// only shows at run time (a prefix plus a table name, a replacement with
// $1) is refused where the record is produced.
func (r *ReservedTopics) Validate(config map[string]string) []FieldError {
	if r == nil {
		return nil
	}
	var out []FieldError
	refuse := func(key, topic string) {
		out = append(out, FieldError{Name: key, Message: r.KeyError(key, topic).Error()})
	}
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range config {
			if !yield(k) {
				return
			}
		}
	}) {
		v := strings.TrimSpace(config[key])
		switch {
		case key == KeyTopicsRegex || strings.HasSuffix(key, "."+KeyTopicsRegex):
			re, err := regexp.Compile(TopicsRegex(v))
			if err != nil || v == "" {
				continue
			}
			for _, t := range append(slices.Clone(r.storage), probes...) {
				if re.MatchString(t) {
					out = append(out, FieldError{Name: key, Message: fmt.Sprintf("%s %q matches topic %q; %s (narrow the expression)", key, v, t, reservedHint)})
					break
				}
			}
		case key == "topic" || key == KeyTopics || strings.HasSuffix(key, ".topic") || strings.HasSuffix(key, ".topics") || strings.HasSuffix(key, ".topic.name"):
			for _, t := range SplitList(v) {
				if r.Reserved(t) {
					refuse(key, t)
					break
				}
			}
		case key == "topic.prefix" || strings.HasSuffix(key, ".topic.prefix"):
			if strings.HasPrefix(v, InternalTopicPrefix) {
				refuse(key, v+"...")
			}
		case strings.HasPrefix(key, KeyTransforms+".") && (strings.HasSuffix(key, ".replacement") || strings.HasSuffix(key, ".topic.format")):
			name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(key, KeyTransforms+"."), ".replacement"), ".topic.format")
			typ := config[KeyTransforms+"."+name+".type"]
			if !strings.HasSuffix(typ, "RegexRouter") && !strings.HasSuffix(typ, "TimestampRouter") {
				continue
			}
			literal, _, templated := strings.Cut(v, "$")
			if (!templated && r.Reserved(literal)) || strings.HasPrefix(literal, InternalTopicPrefix) {
				refuse(key, v)
			}
		}
	}
	return out
}

// WithReservedTopics makes ValidateConfig refuse config keys that name,
// match or route to reserved topics.
func WithReservedTopics(r *ReservedTopics) ValidateOption {
	return func(o *validateOptions) { o.reserved = r }
}
