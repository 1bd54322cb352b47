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

package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/pathguard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
)

// TestFileSourceBacklog: the unread bytes are each file's size minus its
// stored position, over the files a glob lists; a missing file counts 0,
// a truncated one 0 until the task reads it again.
func TestFileSourceBacklog(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	writeFile(t, a, strings.Repeat("x", 99)+"\n") // 100 bytes
	writeFile(t, b, strings.Repeat("y", 49)+"\n") // 50 bytes
	missing := filepath.Join(t.TempDir(), "later.log")
	config := map[string]string{KeyFiles: filepath.Join(dir, "*.log") + "," + missing, KeyTopic: "t"}
	store := plugintest.NewOffsetStore()
	c := &SourceConnector{}
	if u := c.BacklogUnit(config); u != plugin.BacklogBytes {
		t.Fatalf("unit %q, want %q", u, plugin.BacklogBytes)
	}
	backlog := func() int64 { t.Helper(); return plugintest.Backlog(t, context.Background(), c, config, store) }
	if got := backlog(); got != 150 {
		t.Fatalf("nothing read: backlog %d, want 150", got)
	}
	if err := store.Put(map[string]any{PartitionFile: a}, map[string]any{OffsetPosition: int64(40)}); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(map[string]any{PartitionFile: b}, map[string]any{OffsetPosition: int64(50)}); err != nil {
		t.Fatal(err)
	}
	if got := backlog(); got != 60 {
		t.Fatalf("a at 40 of 100, b at its end: backlog %d, want 60", got)
	}
	writeFile(t, missing, "0123456789") // appears: 10 unread bytes
	if got := backlog(); got != 70 {
		t.Fatalf("after the missing file appeared: backlog %d, want 70", got)
	}
	if err := os.Truncate(a, 10); err != nil { // shorter than its position
		t.Fatal(err)
	}
	if got := backlog(); got != 10 {
		t.Fatalf("after truncating a below its position: backlog %d, want 10", got)
	}
}

// TestFileSourceBacklogConfined: under a confined file access the figure
// refuses a path outside the granted directories, naming the key, and
// stats nothing there.
func TestFileSourceBacklogConfined(t *testing.T) {
	ctx, granted, outside := confined(t)
	c := &SourceConnector{}
	store := plugintest.NewOffsetStore()
	got, err := c.Backlog(ctx, map[string]string{KeyFile: filepath.Join(granted, "a.txt"), KeyTopic: "t"}, store)
	if err != nil || got.Value != 3 {
		t.Fatalf("granted file: backlog %+v, %v; want 3 bytes", got, err)
	}
	for _, config := range []map[string]string{
		{KeyFile: filepath.Join(outside, "secret.txt"), KeyTopic: "t"},
		{KeyFiles: filepath.Join(outside, "*.txt"), KeyTopic: "t"},
	} {
		_, err := c.Backlog(ctx, config, store)
		var fr *plugin.FileRefused
		if !errors.As(err, &fr) {
			t.Fatalf("%v: want a refusal, got %v", config, err)
		}
		if want := fileKey(config); fr.Key != want {
			t.Fatalf("refusal names %q, want %q: %v", fr.Key, want, err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(granted, "link.txt")); err != nil {
		t.Fatal(err)
	}
	_, err = c.Backlog(ctx, map[string]string{KeyFile: filepath.Join(granted, "link.txt"), KeyTopic: "t"}, store)
	if !errors.Is(err, pathguard.ErrRefused) {
		t.Fatalf("link to outside: want a refusal, got %v", err)
	}
	// A link placed in a globbed directory is left out, as the connector
	// leaves it out of its files.
	got, err = c.Backlog(ctx, map[string]string{KeyFiles: filepath.Join(granted, "*.txt"), KeyTopic: "t"}, store)
	if err != nil || got.Value != 3 {
		t.Fatalf("glob with a link outside: backlog %+v, %v; want 3 bytes (a.txt only)", got, err)
	}
}
