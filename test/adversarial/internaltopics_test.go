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

package adversarial

import "testing"

// TestInternalTopicsOffLimits: a tenant tries to write into the cluster's
// config topic (to create or reconfigure other teams' connectors) and to
// read its offsets and statuses, through every topic key: topic, topics,
// topics.regex, the dead letter queue, offsets.storage.topic, a RegexRouter
// and a "__" topic, on the owner's cluster and on its own namespace's.
// Each is Ready=False naming the key. On 31d73a5 every one of them ran
// (the first, into the config topic, was Ready=True).
func TestInternalTopicsOffLimits(t *testing.T) {
	owner := newTenant(t, "adv-topics", "")
	own := newTenant(t, "adv-topics-other", "")
	// Every config is valid but for the key under test (the sinks are
	// PostgresSinks into the tier's server), so a refusal for any other
	// reason does not count.
	sink := func(topics string, extra ...string) map[string]string {
		cfg := pgSinkConfig("adv-in")
		cfg["topics"] = topics
		for i := 0; i+1 < len(extra); i += 2 {
			cfg[extra[i]] = extra[i+1]
		}
		return cfg
	}
	for _, tn := range []tenant{owner, own} {
		group := tn.ns + ".cc" // the default groupId; storage topics <groupId>-configs, -offsets, -status
		regex := sink("")
		delete(regex, "topics")
		regex["topics.regex"] = ".*"
		tn.refusesAll(t, []attackCase{
			{"to-config", "RangeSource", "topic", map[string]string{"topic": group + "-configs", "count": "10"}},
			{"read-offsets", "PostgresSink", "topics", sink(group + "-offsets")},
			{"regex-all", "PostgresSink", "topics.regex", regex},
			{"dlq", "PostgresSink", "errors.deadletterqueue.topic.name", sink("adv-in", "errors.tolerance", "all", "errors.deadletterqueue.topic.name", group+"-configs")},
			{"own-offsets", "RangeSource", "offsets.storage.topic", map[string]string{"topic": "adv-out", "count": "10", "offsets.storage.topic": group + "-status"}},
			{"router", "RangeSource", "transforms.r.replacement", map[string]string{"topic": "adv-out", "count": "10", "transforms": "r",
				"transforms.r.type": "RegexRouter", "transforms.r.regex": ".*", "transforms.r.replacement": group + "-configs"}},
			{"dunder", "RangeSource", "topic", map[string]string{"topic": "__consumer_offsets", "count": "10"}},
		})
	}
}
