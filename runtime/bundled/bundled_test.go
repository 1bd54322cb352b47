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

package bundled

import (
	"context"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

func TestRegistry(t *testing.T) {
	r := Registry()
	list := r.List()
	if len(list) != 11 {
		t.Fatalf("%d plugins", len(list))
	}
	for name, kind := range map[string]plugin.Kind{
		"FileSource": plugin.KindSource, "FileSinkConnector": plugin.KindSink, "RangeSource": plugin.KindSource,
		"org.apache.kafka.connect.file.FileStreamSourceConnector": plugin.KindSource,
		"FileStreamSink": plugin.KindSink,
		"dev.conveyor.connect.range.RangeSourceConnector": plugin.KindSource,
		"PostgresCDCSource":   plugin.KindSource,
		"PostgresTableSource": plugin.KindSource, "PostgresSinkConnector": plugin.KindSink,
		"RedisSink": plugin.KindSink, "S3Sink": plugin.KindSink,
		"dev.conveyor.connect.postgres.PostgresTableSourceConnector": plugin.KindSource,
		"ElasticsearchSink": plugin.KindSink,
		"MySqlSource":       plugin.KindSource, "MySqlTableSource": plugin.KindSource, "MySqlSink": plugin.KindSink,
		"dev.conveyor.connect.mysql.MySqlSinkConnector": plugin.KindSink,
	} {
		p, ok := r.Lookup(name)
		if !ok || p.Kind != kind || p.Version == "" {
			t.Errorf("%s: %+v %v", name, p, ok)
		}
	}
}

func TestSampleConfigsValidate(t *testing.T) {
	// The configs of config/samples/connect_v1alpha1_kafkaconnector_*.yaml.
	samples := []map[string]string{
		{"name": "numbers", "connector.class": "RangeSource", "tasks.max": "4", "topic": "numbers", "range.start": "0", "range.end": "1000000", "batch.size": "1000"},
		{"name": "numbers-to-file", "connector.class": "FileSink", "tasks.max": "6", "topics": "numbers", "file": t.TempDir() + "/numbers.jsonl"},
		{"name": "lines", "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": "/tmp/in.txt", "topic": "lines"},
	}
	r := Registry()
	for _, cfg := range samples {
		p, ok := r.Lookup(cfg["connector.class"])
		if !ok {
			t.Fatalf("no plugin %s", cfg["connector.class"])
		}
		if res := plugin.ValidateConfig(context.Background(), p, cfg); res.ErrorCount != 0 {
			t.Errorf("%s: %+v", cfg["name"], res.Errors())
		}
	}
}
