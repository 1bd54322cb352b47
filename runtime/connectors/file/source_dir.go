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
	"log/slog"
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

// checkEntry checks one configured entry against the worker's file
// access: a plain path (file or directory) where it leads after links are
// followed, a glob by the directory it starts from (the part before its
// first *, ? or [), so neither can reach beyond the granted directories;
// the files a glob or directory gives are checked again each time they are
// listed and when they are opened.
func checkEntry(access *plugin.FileAccess, e entry) error {
	if !access.Confined() {
		return nil
	}
	path := e.path
	if i := strings.IndexAny(path, "*?["); i >= 0 {
		path = filepath.Dir(path[:i] + "x")
	}
	if _, err := access.Check(path); err != nil {
		return plugin.RefuseFile(e.key, err)
	}
	return nil
}

// expand lists the connector's entries (see expandEntries).
func (c *SourceConnector) expand() ([]string, error) {
	return expandEntries(c.access, c.entries, c.log)
}

// expandEntries turns the configured entries into the files to read,
// sorted and de-duplicated: a plain path stays as it is (it may not exist
// yet); a directory gives the regular files directly in it (not hidden
// ones, not subdirectories); a glob gives the regular files it matches.
// Every entry is checked against the file access (a refused one is an
// error naming its key), and every listed file too: one that leads outside
// the granted directories (a link put there, perhaps after the connector
// started) is left out and logged.
func expandEntries(access *plugin.FileAccess, entries []entry, log *slog.Logger) ([]string, error) {
	var out []string
	for _, en := range entries {
		if err := checkEntry(access, en); err != nil {
			return nil, err
		}
		e := en.path
		var listed []string
		switch {
		case strings.ContainsAny(e, "*?["):
			m, err := filepath.Glob(e)
			if err != nil {
				return nil, fmt.Errorf("file source: bad glob %q in %s: %w", e, en.key, err)
			}
			listed = regular(m)
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
			listed = regular(m)
		default:
			out = append(out, e)
			continue
		}
		for _, f := range listed {
			if _, err := access.Check(f); err != nil {
				if log != nil {
					log.Warn("file source: leaving out a listed file the worker may not read", "key", en.key, "error", err.Error())
				}
				continue
			}
			out = append(out, f)
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
		got, err := c.expand()
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
