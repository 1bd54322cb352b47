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
	"fmt"
	"io/fs"
	"os"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

var _ plugin.BacklogReporter = (*SourceConnector)(nil)

// BacklogUnit: bytes, always.
func (c *SourceConnector) BacklogUnit(map[string]string) string { return plugin.BacklogBytes }

// Backlog is the bytes not read yet: over the connector's files (its
// directories and globs listed as the connector lists them), each file's
// size minus its stored position, at least 0 (a file shorter than its
// position was truncated or replaced; the task starts it again and its
// figure is its size only once it is read from there). A file that does
// not exist yet counts 0. Every file is opened through the worker's file
// access, as the task opens it, so the figure never stats a path the
// connector may not read: a refused one is an error naming its key.
func (c *SourceConnector) Backlog(ctx context.Context, config map[string]string, offsets plugin.OffsetReader) (plugin.Backlog, error) {
	es := entries(config)
	if len(es) == 0 {
		return plugin.Backlog{}, errors.New("file source: set file or files to at least one path")
	}
	access := plugin.FileAccessOf(ctx)
	paths, err := expandEntries(access, es, nil)
	if err != nil {
		return plugin.Backlog{}, err
	}
	parts := make([]map[string]any, len(paths))
	for i, p := range paths {
		parts[i] = map[string]any{PartitionFile: p}
	}
	stored, err := offsets.Offsets(ctx, parts)
	if err != nil {
		return plugin.Backlog{}, fmt.Errorf("file source: reading stored offsets: %w", err)
	}
	var total int64
	for i, p := range paths {
		size, err := fileSize(access, fileKey(config), p)
		if err != nil {
			return plugin.Backlog{}, err
		}
		var pos int64
		if i < len(stored) && stored[i] != nil {
			if pos, err = plugin.OffsetInt64(stored[i][OffsetPosition]); err != nil {
				return plugin.Backlog{}, fmt.Errorf("file source: stored offset of %s: %w", p, err)
			}
		}
		total += max(0, size-pos)
	}
	return plugin.Backlog{Value: total, Unit: plugin.BacklogBytes}, nil
}

// fileSize is the size of path opened through access (0 when it does not
// exist yet); a refused path is an error naming key.
func fileSize(access *plugin.FileAccess, key, path string) (int64, error) {
	f, err := access.Open(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("file source: opening %s: %w", path, plugin.RefuseFile(key, err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("file source: %s: %w", path, err)
	}
	return st.Size(), nil
}
