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

package herder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/connectors/file"
	"github.com/conveyor-dev/conveyor/runtime/pathguard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// TestFileSourceBacklogThroughTheWorker: the herder asks a file source for
// its unread bytes with its stored offsets and the worker's file access: a
// file swapped for a link outside the granted directory after the
// connector was created is refused, not measured.
func TestFileSourceBacklogThroughTheWorker(t *testing.T) {
	root := t.TempDir()
	granted, outside := filepath.Join(root, "granted"), filepath.Join(root, "outside")
	for _, d := range []string{granted, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := filepath.Join(granted, "a.log")
	if err := os.WriteFile(a, []byte(strings.Repeat("x", 99)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte(strings.Repeat("s", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, true, func(o *Options) {
		o.Plugins.MustRegister(file.SourcePlugin())
		o.Grants = &plugin.Grants{Files: pathguard.Confine([]string{granted}, nil)}
	})
	ctx := context.Background()
	cfg := map[string]string{"name": "f", "connector.class": "FileSource", "tasks.max": "1", "topic": "lines", "file": a}
	if _, err := e.h.CreateConnector(ctx, connectapi.CreateConnectorRequest{Name: "f", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if err := e.h.opts.Offsets.Put(ctx, "f", []store.SourceOffset{{Partition: map[string]any{file.PartitionFile: a}, Offset: map[string]any{file.OffsetPosition: int64(30)}}}); err != nil {
		t.Fatal(err)
	}
	b, err := e.h.Backlog(ctx, "f")
	if err != nil || b.Value != 70 || b.Unit != plugin.BacklogBytes {
		t.Fatalf("backlog %+v, %v; want 70 bytes (100 minus the stored 30)", b, err)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), a); err != nil {
		t.Fatal(err)
	}
	b, err = e.h.Backlog(ctx, "f")
	var fr *plugin.FileRefused
	if !errors.As(err, &fr) || fr.Key != file.KeyFile {
		t.Fatalf("file swapped for a link outside: backlog %+v, %v; want a refusal naming %s", b, err, file.KeyFile)
	}
}
