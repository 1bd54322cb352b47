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

package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyor-dev/conveyor/runtime/pathguard"
)

// FileAccess confines the paths a connector opens (FileSource, FileSink):
// in distributed mode only under the directories the cluster's owner
// granted, never the worker's own files, judged after links are followed
// and again on the opened file. A nil FileAccess allows every path
// (standalone mode).
type FileAccess = pathguard.Guard

// FileGrantHint tells a connector's author what to do about a refused path.
const FileGrantHint = "use a path under a granted directory, or ask the cluster's owner to grant its directory in the ConnectCluster's spec.connectorAccess.fileConnectors (worker key file.connectors.allowed.paths)"

type fileAccessKey struct{}

// WithFileAccess returns ctx carrying the worker's file access; the runtime
// sets it on the contexts of Validate, connector Start and task Start.
func WithFileAccess(ctx context.Context, a *FileAccess) context.Context {
	if a == nil {
		return ctx
	}
	return context.WithValue(ctx, fileAccessKey{}, a)
}

// FileAccessOf returns the file access ctx carries (nil: every path).
func FileAccessOf(ctx context.Context) *FileAccess {
	a, _ := ctx.Value(fileAccessKey{}).(*FileAccess)
	return a
}

// FileRefused is the error of a path refused under config key Key.
type FileRefused struct {
	Key string
	Err error
}

func (e *FileRefused) Error() string {
	return fmt.Sprintf("%s: %v; %s", e.Key, e.Err, FileGrantHint)
}

func (e *FileRefused) Unwrap() error { return e.Err }

// RefuseFile wraps err, when it is a refusal of the file access, as a
// *FileRefused naming key; other errors are returned as they are.
func RefuseFile(key string, err error) error {
	if err != nil && errors.Is(err, pathguard.ErrRefused) {
		var fr *FileRefused
		if errors.As(err, &fr) {
			return err
		}
		return &FileRefused{Key: key, Err: err}
	}
	return err
}
