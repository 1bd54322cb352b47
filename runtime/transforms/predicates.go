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

import "regexp"

const predicatePrefix = kafkaPrefix + "predicates."

func init() {
	registerPredicate(&PredicateType{Class: predicatePrefix + "TopicNameMatches", Aliases: []string{"TopicNameMatches"},
		Doc:     "True for records whose topic matches the regex entirely.",
		Options: []Option{{Name: "pattern", Required: true, Doc: "Regular expression for the topic."}},
		New: func(o *Options) Predicate {
			expr := o.Required("pattern")
			re, err := regexp.Compile("^(?:" + expr + ")$")
			if err != nil {
				o.Fail("pattern", "not a valid regular expression: %v", err)
				return nil
			}
			matches := topicCache{}
			return PredicateFunc(func(r *Record) bool {
				return matches.get(r.Topic, func(topic string) string {
					if re.MatchString(topic) {
						return "y"
					}
					return ""
				}) != ""
			})
		}})
	registerPredicate(&PredicateType{Class: predicatePrefix + "HasHeaderKey", Aliases: []string{"HasHeaderKey"},
		Doc:     "True for records with at least one header with the key.",
		Options: []Option{{Name: "name", Required: true, Doc: "Header key."}},
		New: func(o *Options) Predicate {
			name := o.Required("name")
			return PredicateFunc(func(r *Record) bool {
				_, ok := r.Headers.Last(name)
				return ok
			})
		}})
	registerPredicate(&PredicateType{Class: predicatePrefix + "RecordIsTombstone", Aliases: []string{"RecordIsTombstone"},
		Doc: "True for tombstones (records with a null value).",
		New: func(*Options) Predicate { return PredicateFunc(func(r *Record) bool { return r.Value == nil }) }})
}
