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
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// heapProfileOnSignal writes a Go heap profile to path each time the
// process gets SIGUSR1 (--heapprofile): after a collection, so its
// inuse_space is the live heap of that moment. The file is written beside
// path and renamed, so a reader never sees half a profile. The returned
// stop ends the handling (SIGUSR1 then has its default action again).
func heapProfileOnSignal(path string, stderr io.Writer) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range sigs {
			if err := writeHeapProfile(path); err != nil {
				fmt.Fprintf(stderr, "conveyor-worker: --heapprofile: %v\n", err)
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(sigs)
		<-done
	}
}

func writeHeapProfile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(tmp, 0); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
