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

package benchkit

import (
	"os"
	"testing"
	"time"
)

func TestCPUSecondsGrowsWithWork(t *testing.T) {
	before, err := CPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x, deadline := 0, time.Now().Add(10*time.Second)
	for after := before; after < before+0.05; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s of busy work, CPU time %.2f s then %.2f s: it does not grow", before, after)
		}
		for i := range 10_000_000 {
			x ^= i
		}
		if after, err = CPUSeconds(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	_ = x
}
