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
	"slices"
	"strings"
	"testing"
)

// Every topic key of a connector config is checked against the reserved
// topics, naming the key: the members of the class tried here are the
// ones issue 25 lists and their neighbours.
func TestReservedTopicsValidateNamesTheKey(t *testing.T) {
	r := NewReservedTopics("cc-configs", "cc-offsets", "cc-status")
	cases := []struct {
		cfg map[string]string
		key string
	}{
		{map[string]string{"topic": "cc-configs"}, "topic"},
		{map[string]string{"topics": "orders, cc-offsets"}, "topics"},
		{map[string]string{"topics": "__consumer_offsets"}, "topics"},
		{map[string]string{"topics.regex": ".*"}, "topics.regex"},
		{map[string]string{"topics.regex": "cc-.*"}, "topics.regex"},
		{map[string]string{"topics.regex": "__.*"}, "topics.regex"},
		{map[string]string{KeyDLQTopicName: "cc-configs"}, KeyDLQTopicName},
		{map[string]string{KeyOffsetsStorageTopic: "cc-status"}, KeyOffsetsStorageTopic},
		{map[string]string{"topic.prefix": "__pg."}, "topic.prefix"},
		{map[string]string{"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": ".*", "transforms.r.replacement": "cc-configs"}, "transforms.r.replacement"},
		{map[string]string{"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter", "transforms.r.regex": "(.*)", "transforms.r.replacement": "__$1"}, "transforms.r.replacement"},
		{map[string]string{"transforms": "t", "transforms.t.type": "TimestampRouter", "transforms.t.topic.format": "cc-status"}, "transforms.t.topic.format"},
	}
	for _, c := range cases {
		errs := r.Validate(c.cfg)
		i := slices.IndexFunc(errs, func(fe FieldError) bool { return fe.Name == c.key })
		if i < 0 || !strings.Contains(errs[i].Message, "off limits") {
			t.Errorf("%v: errors %v, want one on %s", c.cfg, errs, c.key)
		}
	}
	for _, ok := range []map[string]string{
		{"topics": "orders,cc-configs-archive"},
		{"topics.regex": `orders\..*`},
		{"topic.prefix": "pg."},
		{"transforms": "m", "transforms.m.type": "MaskField$Value", "transforms.m.replacement": "cc-configs"},
		{"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "(.*)", "transforms.r.replacement": "routed-$1"},
	} {
		if errs := r.Validate(ok); len(errs) > 0 {
			t.Errorf("%v refused: %v", ok, errs)
		}
	}
	var none *ReservedTopics
	if none.Validate(map[string]string{"topics": "__consumer_offsets"}) != nil || none.Reserved("__x") {
		t.Error("a nil ReservedTopics reserved something")
	}
}
