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

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// --heapprofile: each SIGUSR1 writes a whole heap profile (gzipped
// protobuf, what go tool pprof reads), replacing the last one.
func TestHeapProfileOnSIGUSR1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worker.heap")
	var stderr bytes.Buffer
	stop := heapProfileOnSignal(path, &stderr)
	defer stop()
	for round := range 2 {
		os.Remove(path)
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		err := testkit.Until(context.Background(), 10*time.Second, "the heap profile written", func(context.Context) (bool, error) {
			_, err := os.Stat(path)
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("round %d: %v (stderr: %s)", round, err, stderr.String())
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("round %d: the profile is not gzipped as pprof writes it: %v", round, err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil || !bytes.Contains(b, []byte("inuse_space")) {
			t.Fatalf("round %d: the profile has no inuse_space sample type (%d bytes, %v)", round, len(b), err)
		}
	}
	if stderr.Len() > 0 {
		t.Fatalf("stderr: %s", stderr.String())
	}
}
