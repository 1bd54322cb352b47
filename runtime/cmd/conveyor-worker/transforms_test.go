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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConnectorTransforms: through the REST API, a connector with an
// unknown transform type is refused (400, the key named) and the validate
// endpoint puts the error on that key; a file source with HoistField,
// InsertField and RegexRouter writes transformed records to the routed
// topic, which GET /connectors/{c}/topics reports.
func TestConnectorTransforms(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var lines []string
	for i := 0; i < 10; i++ {
		lines = append(lines, fmt.Sprintf("line-%06d", i))
	}
	writeFile(t, in, strings.Join(lines, "\n")+"\n")
	w := startWorker(t, workerConfig(t, dir, c.addr))

	bad := map[string]string{"connector.class": "FileSource", "file": in, "topic": "lines",
		"transforms": "x", "transforms.x.type": "org.example.Nope"}
	var e struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	if code := call(t, "POST", w.url+"/connectors", "", map[string]any{"name": "bad", "config": bad}, &e); code != 400 ||
		!strings.Contains(e.Message, "transforms.x.type") {
		t.Fatalf("creating a connector with an unknown transform: %d %+v", code, e)
	}
	var v struct {
		ErrorCount int `json:"error_count"`
		Configs    []struct {
			Value struct {
				Name   string   `json:"name"`
				Errors []string `json:"errors"`
			} `json:"value"`
		} `json:"configs"`
	}
	bad["name"] = "bad"
	if code := call(t, "PUT", w.url+"/connector-plugins/FileSource/config/validate", "", bad, &v); code != 200 || v.ErrorCount != 1 {
		t.Fatalf("validate: %d %+v", code, v)
	}
	onKey := false
	for _, cfg := range v.Configs {
		if cfg.Value.Name == "transforms.x.type" && len(cfg.Value.Errors) == 1 {
			onKey = true
		}
	}
	if !onKey {
		t.Fatalf("validate: no error on transforms.x.type: %+v", v.Configs)
	}

	good := map[string]string{"connector.class": "FileSource", "file": in, "topic": "lines", "poll.interval.ms": "20",
		"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
		"transforms":                     "hoist,insert,route",
		"transforms.hoist.type":          "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.hoist.field":         "line",
		"transforms.insert.type":         "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.insert.static.field": "origin",
		"transforms.insert.static.value": "file-source",
		"transforms.route.type":          "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.route.regex":         "(.*)",
		"transforms.route.replacement":   "routed-$1",
	}
	if code := call(t, "POST", w.url+"/connectors", "", map[string]any{"name": "src", "config": good}, nil); code != 201 {
		t.Fatalf("creating the connector: %d", code)
	}
	cl, err := kgo.NewClient(append(c.opts, kgo.ConsumeTopics("routed-lines"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []map[string]any
	for len(got) < len(lines) {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from routed-lines", len(got), len(lines))
		}
		f.EachRecord(func(r *kgo.Record) {
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("record %q: %v", r.Value, err)
			}
			got = append(got, m)
		})
	}
	// The routed topic was auto-created with several partitions: records
	// arrive in any order across them.
	seen := map[any]bool{}
	for _, m := range got {
		if m["origin"] != "file-source" || len(m) != 2 {
			t.Fatalf("record %v: want a line with origin inserted", m)
		}
		seen[m["line"]] = true
	}
	for _, l := range lines {
		if !seen[l] {
			t.Fatalf("%s missing from routed-lines (got %v)", l, got)
		}
	}
	// The active topics are where the records went, after the routing.
	var topics map[string]struct {
		Topics []string `json:"topics"`
	}
	testkit.EventuallyTrue(t, 10*time.Second, "active topics", func() bool {
		call(t, "GET", w.url+"/connectors/src/topics", "", nil, &topics)
		return len(topics["src"].Topics) > 0
	})
	if got := topics["src"].Topics; len(got) != 1 || got[0] != "routed-lines" {
		t.Fatalf("active topics = %v, want [routed-lines]", got)
	}
}
