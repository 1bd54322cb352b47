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
// Each is Ready=False naming the key. On 31d73a5 every one of them ran.
func TestInternalTopicsOffLimits(t *testing.T) {
	// Both grant /data, so the sinks' only error is the one under test.
	owner := newTenant(t, "adv-topics", "  connectorAccess:\n    fileConnectors: [{path: /data}]\n")
	own := newTenant(t, "adv-topics-other", "  connectorAccess:\n    fileConnectors: [{path: /data}]\n")
	for _, tn := range []tenant{owner, own} {
		group := tn.ns + ".cc" // the default groupId; storage topics <groupId>-configs, -offsets, -status
		tn.refusesAll(t, []attackCase{
			{"to-config", "RangeSource", "topic", map[string]string{"topic": group + "-configs"}},
			{"read-offsets", "FileSink", "topics", map[string]string{"topics": group + "-offsets", "file": "/data/x"}},
			{"regex-all", "FileSink", "topics.regex", map[string]string{"topics.regex": ".*", "file": "/data/x"}},
			{"dlq", "FileSink", "errors.deadletterqueue.topic.name", map[string]string{"topics": "adv-in", "file": "/data/x",
				"errors.tolerance": "all", "errors.deadletterqueue.topic.name": group + "-configs"}},
			{"own-offsets", "RangeSource", "offsets.storage.topic", map[string]string{"topic": "adv-out", "count": "10", "offsets.storage.topic": group + "-status"}},
			{"router", "RangeSource", "transforms.r.replacement", map[string]string{"topic": "adv-out", "count": "10", "transforms": "r",
				"transforms.r.type": "RegexRouter", "transforms.r.regex": ".*", "transforms.r.replacement": group + "-configs"}},
			{"dunder", "RangeSource", "topic", map[string]string{"topic": "__consumer_offsets"}},
		})
	}
}
