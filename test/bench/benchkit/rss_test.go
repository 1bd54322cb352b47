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
)

func TestVmRSSMBReadsThisProcess(t *testing.T) {
	mb, err := VmRSSMB(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if mb < 1 || mb > 4096 {
		t.Fatalf("VmRSS of this test process is %.1f MiB, want between 1 and 4096", mb)
	}
	if _, err := VmRSSMB(-1); err == nil {
		t.Fatal("VmRSSMB(-1) gave no error")
	}
}
