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

// TestFileConnectorsReachOnlyGrantedPaths: a tenant who may create
// KafkaConnectors tries to read the worker's own files (config, tokens,
// the ServiceAccount token, /proc/self/environ) and to write into the
// worker's scratch space and log stream, by path, `..`, glob and directory,
// on the owner's cluster (which grants /data) and on a cluster of its own
// namespace (which grants nothing). Every attempt is refused, naming the key.
// On 31d73a5 the FileSource over /etc/conveyor/worker.properties ran and
// published the worker config (the connector became Ready=True).
func TestFileConnectorsReachOnlyGrantedPaths(t *testing.T) {
	owner := newTenant(t, "adv-files", "  connectorAccess:\n    fileConnectors: [{path: /data}]\n")
	own := newTenant(t, "adv-files-other", "")
	paths := []struct{ name, class, key, path string }{
		{"worker-config", "FileSource", "file", "/etc/conveyor/worker.properties"},
		{"dotdot", "FileSource", "file", "/data/../etc/conveyor/rest/token"},
		{"glob", "FileSource", "files", "/etc/conveyor/*"},
		{"directory", "FileSource", "files", "/var/run/secrets/kubernetes.io/serviceaccount"},
		{"environ", "FileSource", "file", "/proc/self/environ"},
		{"scratch", "FileSink", "file", "/tmp/fill.out"},
		{"log-stream", "FileSink", "file", "/dev/stdout"},
	}
	var cases []attackCase
	for _, p := range paths {
		cfg := map[string]string{p.key: p.path, "topic": "adv-files"}
		if p.class == "FileSink" {
			cfg = map[string]string{p.key: p.path, "topics": "adv-files"}
		}
		cases = append(cases, attackCase{p.name, p.class, p.key, cfg})
	}
	owner.refusesAll(t, cases)
	own.refusesAll(t, cases)
}
