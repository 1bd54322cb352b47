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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/pathguard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// confined is a granted directory with a file in it, a directory outside
// with a "secret", and a context carrying the access that grants only the
// first (as a distributed worker's).
func confined(t *testing.T) (ctx context.Context, granted, outside string) {
	t.Helper()
	root := t.TempDir()
	granted, outside = filepath.Join(root, "granted"), filepath.Join(root, "outside")
	for _, d := range []string{granted, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(granted, "a.txt"), "a1\n")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret\n")
	return plugin.WithFileAccess(context.Background(), pathguard.Confine([]string{granted}, nil)), granted, outside
}

func TestFileConnectorsConfinedInValidation(t *testing.T) {
	ctx, granted, outside := confined(t)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(granted, "link.txt")); err != nil {
		t.Fatal(err)
	}
	src := func(k, v string) map[string]string {
		return map[string]string{"name": "s", "connector.class": "FileSource", "topic": "t", k: v}
	}
	sink := func(v string) map[string]string {
		return map[string]string{"name": "k", "connector.class": "FileSink", "topics": "t", "file": v}
	}
	cases := []struct {
		name string
		p    plugin.Plugin
		cfg  map[string]string
		key  string
	}{
		{"outside", SourcePlugin(), src("file", filepath.Join(outside, "secret.txt")), "file"},
		{"dotdot", SourcePlugin(), src("file", filepath.Join(granted, "..", "outside", "secret.txt")), "file"},
		{"link", SourcePlugin(), src("files", filepath.Join(granted, "link.txt")), "files"},
		{"glob above", SourcePlugin(), src("files", filepath.Join(granted, "..", "*", "*.txt")), "files"},
		{"directory", SourcePlugin(), src("file", outside), "file"},
		{"environ", SourcePlugin(), src("file", "/proc/self/environ"), "file"},
		{"worker config", SourcePlugin(), src("files", "/etc/conveyor/*"), "files"},
		{"sink outside", SinkPlugin(), sink(filepath.Join(outside, "out.txt")), "file"},
		{"sink log stream", SinkPlugin(), sink("/dev/stdout"), "file"},
		{"sink through link", SinkPlugin(), sink(filepath.Join(granted, "link.txt")), "file"},
	}
	for _, c := range cases {
		res := plugin.ValidateConfig(ctx, c.p, c.cfg)
		var msgs []string
		for _, fe := range res.Errors() {
			if fe.Name == c.key {
				msgs = append(msgs, fe.Message)
			}
		}
		if len(msgs) == 0 || !strings.Contains(msgs[0], "spec.connectorAccess.fileConnectors") {
			t.Errorf("%s: errors on %s = %v (all: %v), want a refusal naming the fix", c.name, c.key, msgs, res.Errors())
		}
	}
	for _, ok := range []map[string]string{src("file", filepath.Join(granted, "a.txt")), src("files", granted+"/*.txt"), src("file", granted)} {
		if res := plugin.ValidateConfig(ctx, SourcePlugin(), ok); res.ErrorCount > 0 {
			t.Errorf("%v refused: %v", ok, res.Errors())
		}
	}
	if res := plugin.ValidateConfig(ctx, SinkPlugin(), sink(filepath.Join(granted, "out.txt"))); res.ErrorCount > 0 {
		t.Errorf("sink in the granted directory refused: %v", res.Errors())
	}
	// Standalone (no access in the context) keeps every path.
	if res := plugin.ValidateConfig(context.Background(), SourcePlugin(), src("file", filepath.Join(outside, "secret.txt"))); res.ErrorCount > 0 {
		t.Errorf("standalone refused: %v", res.Errors())
	}
}

// TestFileSourceRescanLeavesOutSwappedLinks: a link put into a watched
// directory after the connector started is left out of the next listing,
// and a listed file that became a link fails its task naming the key.
func TestFileSourceRescanLeavesOutSwappedLinks(t *testing.T) {
	ctx, granted, outside := confined(t)
	cc := plugintest.NewConnectorContext(nil)
	c := &SourceConnector{}
	if err := c.Start(ctx, cc, map[string]string{"files": granted, "topic": "t", KeyFilesCheckIntervalMs: "20"}); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(granted, "b.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(granted, "c.txt"), "c1\n")
	testkit.EventuallyTrue(t, 5*time.Second, "the new regular file listed", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.Contains(c.files, filepath.Join(granted, "c.txt"))
	})
	c.mu.Lock()
	got := slices.Clone(c.files)
	c.mu.Unlock()
	if slices.Contains(got, filepath.Join(granted, "b.txt")) {
		t.Fatalf("the link to outside was listed: %v", got)
	}

	// The task's file is replaced by a link after assignment.
	a := filepath.Join(granted, "a.txt")
	task := &SourceTask{}
	if err := task.Start(ctx, &plugintest.SourceTaskContext{Store: plugintest.NewOffsetStore()}, map[string]string{"files": granted, "topic": "t", KeyTaskFiles: `["` + a + `"]`, "poll.interval.ms": "5"}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), a); err != nil {
		t.Fatal(err)
	}
	recs, err := task.Poll(ctx)
	if err == nil || !strings.Contains(err.Error(), "files:") {
		t.Fatalf("poll after the swap = %v records, error %v; want a refusal naming files", values(recs), err)
	}
	for _, v := range values(recs) {
		if v == "secret" {
			t.Fatal("the secret was read")
		}
	}
}

func TestFileSinkTaskRefusesLinkOutside(t *testing.T) {
	ctx, granted, outside := confined(t)
	out := filepath.Join(granted, "out.txt")
	if err := os.Symlink(filepath.Join(outside, "victim.txt"), out); err != nil {
		t.Fatal(err)
	}
	task := &SinkTask{}
	err := task.Start(ctx, nil, map[string]string{"topics": "t", "file": out})
	if err == nil {
		task.Stop()
		t.Fatal("the sink opened a link to outside")
	}
	if !strings.Contains(err.Error(), "file:") {
		t.Fatalf("error %v does not name the key", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "victim.txt")); !os.IsNotExist(err) {
		t.Fatalf("the sink created the file outside: %v", err)
	}
}
