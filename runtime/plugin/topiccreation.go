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
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Topic creation keys of source connectors (KIP-158), Kafka's names.
const (
	KeyTopicCreationGroups = "topic.creation.groups"
	topicCreationPrefix    = "topic.creation."
	// TopicCreationDefaultGroup is the group every topic falls in when no
	// other group takes it.
	TopicCreationDefaultGroup = "default"
)

// TopicCreationGroup is how a source creates the topics of one group.
type TopicCreationGroup struct {
	Name string
	// Include and Exclude select the group's topics (whole-name regular
	// expressions); the default group includes every topic.
	Include, Exclude []*regexp.Regexp
	// Partitions and ReplicationFactor of a created topic; -1 is the
	// broker's default.
	Partitions        int32
	ReplicationFactor int16
	// Configs are the created topic's configs (cleanup.policy and others).
	Configs map[string]*string
}

// TopicCreation is a source connector's topic creation: its groups in
// order, the default group last. A topic that exists is left as it is.
type TopicCreation struct {
	Groups []TopicCreationGroup
}

// For returns the group that creates topic: the first group whose
// include matches and whose exclude does not, else the default group.
func (tc *TopicCreation) For(topic string) TopicCreationGroup {
	for _, g := range tc.Groups[:len(tc.Groups)-1] {
		if slices.ContainsFunc(g.Include, func(re *regexp.Regexp) bool { return re.MatchString(topic) }) &&
			!slices.ContainsFunc(g.Exclude, func(re *regexp.Regexp) bool { return re.MatchString(topic) }) {
			return g
		}
	}
	return tc.Groups[len(tc.Groups)-1]
}

// ParseTopicCreation reads a source connector's topic.creation.* keys. It
// returns nil when the connector does not ask for topic creation (Kafka's
// rule: topic.creation.default.replication.factor and
// topic.creation.default.partitions both set), and every problem naming
// its key.
func ParseTopicCreation(config map[string]string) (*TopicCreation, []FieldError) {
	var errs []FieldError
	bad := func(key, format string, args ...any) {
		errs = append(errs, FieldError{Name: key, Message: fmt.Sprintf(format, args...)})
	}
	names := SplitList(config[KeyTopicCreationGroups])
	seen := map[string]bool{}
	for _, n := range names {
		if n == TopicCreationDefaultGroup || seen[n] {
			bad(KeyTopicCreationGroups, "group %q is the default group or listed twice", n)
		}
		seen[n] = true
	}
	// Every topic.creation.<group>.* key must belong to a listed group.
	for _, k := range slices.Sorted(maps.Keys(config)) {
		rest, ok := strings.CutPrefix(k, topicCreationPrefix)
		if !ok || k == KeyTopicCreationGroups || k == "topic.creation.enable" {
			continue
		}
		g, _, _ := strings.Cut(rest, ".")
		if g != TopicCreationDefaultGroup && !seen[g] {
			bad(k, "group %q is not in %s", g, KeyTopicCreationGroups)
		}
	}
	def, derrs := parseGroup(config, TopicCreationDefaultGroup, nil)
	errs = append(errs, derrs...)
	_, hasRF := config[topicCreationPrefix+"default.replication.factor"]
	_, hasP := config[topicCreationPrefix+"default.partitions"]
	if !hasRF || !hasP {
		if len(names) > 0 || hasRF || hasP {
			bad(topicCreationPrefix+"default.partitions", "topic creation needs both topic.creation.default.replication.factor and topic.creation.default.partitions")
		}
		return nil, errs
	}
	tc := &TopicCreation{}
	for _, n := range names {
		g, gerrs := parseGroup(config, n, &def)
		errs = append(errs, gerrs...)
		tc.Groups = append(tc.Groups, g)
	}
	tc.Groups = append(tc.Groups, def)
	if len(errs) > 0 {
		return nil, errs
	}
	return tc, nil
}

// parseGroup reads one group's keys; def (nil for the default group) gives
// the partitions and replication factor the group does not set.
func parseGroup(config map[string]string, name string, def *TopicCreationGroup) (TopicCreationGroup, []FieldError) {
	var errs []FieldError
	p := topicCreationPrefix + name + "."
	g := TopicCreationGroup{Name: name, Partitions: -1, ReplicationFactor: -1, Configs: map[string]*string{}}
	if def != nil {
		g.Partitions, g.ReplicationFactor = def.Partitions, def.ReplicationFactor
	}
	for _, k := range slices.Sorted(maps.Keys(config)) {
		opt, ok := strings.CutPrefix(k, p)
		if !ok {
			continue
		}
		v := strings.TrimSpace(config[k])
		switch opt {
		case "partitions":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n == 0 || n < -1 {
				errs = append(errs, FieldError{Name: k, Message: fmt.Sprintf("%q: use -1 (the broker's default) or a positive number of partitions", v)})
			}
			g.Partitions = int32(n)
		case "replication.factor":
			n, err := strconv.ParseInt(v, 10, 16)
			if err != nil || n == 0 || n < -1 {
				errs = append(errs, FieldError{Name: k, Message: fmt.Sprintf("%q: use -1 (the broker's default) or a positive replication factor", v)})
			}
			g.ReplicationFactor = int16(n)
		case "include", "exclude":
			if def == nil {
				errs = append(errs, FieldError{Name: k, Message: "the default group takes every topic no other group takes: it has no include or exclude"})
				continue
			}
			for _, expr := range SplitList(v) {
				re, err := regexp.Compile("^(?:" + expr + ")$")
				if err != nil {
					errs = append(errs, FieldError{Name: k, Message: fmt.Sprintf("%q: %v", expr, err)})
					continue
				}
				if opt == "include" {
					g.Include = append(g.Include, re)
				} else {
					g.Exclude = append(g.Exclude, re)
				}
			}
		default:
			val := config[k]
			g.Configs[opt] = &val
		}
	}
	if def != nil {
		// A group inherits the default group's topic configs it does not set.
		for k, v := range def.Configs {
			if _, ok := g.Configs[k]; !ok {
				g.Configs[k] = v
			}
		}
	}
	return g, errs
}
