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

// Package kafkafault describes requests for the local cluster's Kafka (the standalone
// kfake broker of test/localcluster/cmd/kafka) to refuse, in a file the broker re-reads
// while it runs: how a test makes the broker refuse one client's reads, as an ACL on a
// real cluster would.
package kafkafault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppliedPath is where the broker writes the generation of the faults in force.
func AppliedPath(path string) string { return path + ".applied" }

// Faults is the content of the faults file: the requests the broker refuses, and
// a generation that the broker writes to AppliedPath once they are in force.
type Faults struct {
	Generation int64   `json:"generation"`
	Faults     []Fault `json:"faults"`
}

// Fault refuses requests of one kind: every field given must match.
type Fault struct {
	// Request is the request's name, e.g. "OffsetFetch" (required).
	Request string `json:"request"`
	// Group and Topic narrow it to one group or topic.
	Group string `json:"group,omitempty"`
	Topic string `json:"topic,omitempty"`
	// MaxVersion, when set, refuses only requests of at most this version: the
	// local cluster's Kafka has no principals, so a client is told apart by the
	// versions it speaks (KEDA's sarama speaks older ones than franz-go).
	MaxVersion *int16 `json:"maxVersion,omitempty"`
	// Error is the Kafka error to answer, e.g. "GROUP_AUTHORIZATION_FAILED".
	Error string `json:"error"`
}

// Watch installs the faults of the file at path whenever its content changes, in
// place of the ones before, and writes the generation to AppliedPath(path); it never
// returns.
func Watch(c *kfake.Cluster, path string) {
	var last []byte
	var handle *kfake.FaultHandle
	for ; ; time.Sleep(200 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil || bytes.Equal(b, last) {
			continue
		}
		last = b
		var fs Faults
		if err := json.Unmarshal(b, &fs); err != nil {
			fmt.Fprintf(os.Stderr, "kafka: faults file %s: %v\n", path, err)
			continue
		}
		var in []kfake.Fault
		for _, f := range fs.Faults {
			kf, err := f.kfake()
			if err != nil {
				fmt.Fprintf(os.Stderr, "kafka: faults file %s: %v\n", path, err)
				continue
			}
			in = append(in, kf)
		}
		if handle != nil {
			handle.Remove()
		}
		handle = c.Fault(in...)
		fmt.Fprintf(os.Stderr, "kafka: %d fault(s) in force (generation %d)\n", len(in), fs.Generation)
		if err := os.WriteFile(AppliedPath(path), fmt.Appendf(nil, "%d", fs.Generation), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "kafka: %v\n", err)
		}
	}
}

func (f Fault) kfake() (kfake.Fault, error) {
	key := int16(-1)
	for k := range int16(200) {
		if kmsg.NameForKey(k) == f.Request {
			key = k
			break
		}
	}
	if key < 0 {
		return kfake.Fault{}, fmt.Errorf("request %q: not a Kafka request name", f.Request)
	}
	var kerrErr *kerr.Error
	for code := int16(-1); code < 200; code++ {
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Message == f.Error {
			kerrErr = e
			break
		}
	}
	if kerrErr == nil {
		return kfake.Fault{}, fmt.Errorf("error %q: not a Kafka error name", f.Error)
	}
	out := kfake.Fault{Keys: []kmsg.Key{kmsg.Key(key)}, Group: f.Group, Topic: f.Topic, Err: kerrErr, Count: -1}
	if f.MaxVersion != nil {
		maxV := *f.MaxVersion
		out.When = func(r kmsg.Request) bool { return r.GetVersion() <= maxV }
	}
	return out, nil
}
