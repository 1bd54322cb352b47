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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// KeyFilesCheckIntervalMs is how often a FileSource with a directory or a
// glob among its files looks for files that appeared or went.
const KeyFilesCheckIntervalMs = "files.check.interval.ms"

// isDynamic reports whether a file entry names a set of files that can
// change: a glob pattern (with *, ? or [) or a directory (an existing one,
// or any path ending in /).
func isDynamic(entry string) bool {
	if strings.ContainsAny(entry, "*?[") || strings.HasSuffix(entry, "/") {
		return true
	}
	st, err := os.Stat(entry)
	return err == nil && st.IsDir()
}

// expand turns the configured entries into the files to read, sorted and
// de-duplicated: a plain path stays as it is (it may not exist yet); a
// directory gives the regular files directly in it (not hidden ones, not
// subdirectories); a glob gives the regular files it matches.
func expand(entries []string) ([]string, error) {
	var out []string
	for _, e := range entries {
		switch {
		case strings.ContainsAny(e, "*?["):
			m, err := filepath.Glob(e)
			if err != nil {
				return nil, fmt.Errorf("file source: bad glob %q: %w", e, err)
			}
			out = append(out, regular(m)...)
		case isDynamic(e):
			des, err := os.ReadDir(e)
			if err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("file source: reading directory %s: %w", e, err)
			}
			var m []string
			for _, de := range des {
				if !strings.HasPrefix(de.Name(), ".") {
					m = append(m, filepath.Join(e, de.Name()))
				}
			}
			out = append(out, regular(m)...)
		default:
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// regular keeps the paths that are regular files.
func regular(paths []string) []string {
	var out []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

// watchFiles expands the entries every interval and asks for task
// reconfiguration when the set of files differs from the last one seen.
func (c *SourceConnector) watchFiles(ctx context.Context, cc plugin.ConnectorContext, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		got, err := expand(c.entries)
		if err != nil {
			cc.Logger().Warn("listing the files of the file source", "error", err)
			continue
		}
		c.mu.Lock()
		changed := !slices.Equal(got, c.files)
		old := len(c.files)
		if changed {
			c.files = got
		}
		c.mu.Unlock()
		if changed {
			cc.Logger().Info("the set of files changed; requesting task reconfiguration", "from", old, "to", len(got))
			cc.RequestTaskReconfiguration()
		}
	}
}
