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

package worker

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// A distributed worker wires the isolation rules into connector creation:
// a file outside file.connectors.allowed.paths, a topic key naming the
// cluster's config topic, and an S3Sink without keys on a worker without
// cloud.ambient.credentials.enabled are each refused with 400 naming the
// key; the same file inside the granted directory is accepted.
func TestDistributedWorkerRefusesWhatTheOwnerDidNotGrant(t *testing.T) {
	kafka := newKafka(t)
	granted, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startTestWorker(t, kafka, map[string]string{workerconfig.KeyFileConnectorsAllowedPaths: granted})
	cfg := workerConfig(t, kafka, nil)
	cases := []struct {
		key    string
		config map[string]string
	}{
		{"file", map[string]string{"connector.class": "FileSource", "topic": "t", "file": filepath.Join(outside, "secret.txt")}},
		{"file", map[string]string{"connector.class": "FileSource", "topic": "t", "file": filepath.Join(granted, "..", filepath.Base(outside), "secret.txt")}},
		{"topics", map[string]string{"connector.class": "FileSink", "topics": cfg.ConfigStorageTopic, "file": filepath.Join(granted, "x")}},
		{"topic", map[string]string{"connector.class": "RangeSource", "topic": cfg.StatusStorageTopic}},
		{"aws.access.key.id", map[string]string{"connector.class": "S3Sink", "topics": "t", "s3.bucket.name": "b", "store.url": "http://127.0.0.1:9"}},
	}
	for i, c := range cases {
		c.config["name"] = "attack-" + string(rune('a'+i))
		code, body := doAuth(t, w.token, http.MethodPost, w.url+"/connectors", map[string]any{"name": c.config["name"], "config": c.config})
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.key) {
			t.Errorf("%v: %d %s, want 400 naming %s", c.config, code, body, c.key)
		}
	}
	createConnector(t, w, map[string]string{"name": "fine", "connector.class": "FileSource", "topic": "t", "file": filepath.Join(granted, "in.txt")})
}
