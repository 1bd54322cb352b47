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
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
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

// TestDescendantsNamedFindsOnlyThisProcesssChildren: a grandchild named
// sleep (under a shell this test started) is found; a sleep whose parent
// exited, so that it belongs to no process of this test, is not.
func TestDescendantsNamedFindsOnlyThisProcesssChildren(t *testing.T) {
	out, err := exec.Command("sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(orphan, syscall.SIGKILL) })
	child := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	var got []int
	if err := testkit.Until(context.Background(), 10*time.Second, "the sleep under our shell", func(context.Context) (bool, error) {
		got, err = DescendantsNamed("sleep")
		return len(got) > 0, err
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] == orphan {
		t.Fatalf("DescendantsNamed(sleep) = %v, want only the sleep under our shell (pid %d), not the orphan %d", got, child.Process.Pid, orphan)
	}
}
