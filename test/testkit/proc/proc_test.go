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

package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopEndsAGracefulProcess: a process that exits on the signal is not killed.
func TestStopEndsAGracefulProcess(t *testing.T) {
	p, err := Start(exec.Command("sleep", "30"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("ended by %v, want SIGTERM", p.cmd.ProcessState)
	}
}

// TestStopKillsTheGroupAfterTheGrace: a process that ignores the signal is killed
// after the grace, with the children of its process group.
func TestStopKillsTheGroupAfterTheGrace(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `trap "" TERM; sleep 30 & echo $!; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	p, err := Start(cmd, func() { close(exited) })
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("reading the child's pid: %v (%q)", err, buf[:n])
	}
	start := time.Now()
	err = p.Stop(syscall.SIGTERM, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop = %v, want the kill reported", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("killed after %v, before the grace", d)
	}
	select {
	case <-exited:
	default:
		t.Fatal("onExit did not run before Stop returned")
	}
	if !p.Exited() || p.Err() == nil {
		t.Fatalf("exited %v, err %v", p.Exited(), p.Err())
	}
	deadline := time.Now().Add(5 * time.Second)
	for running(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the group's child %d still runs", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running says whether pid runs (a zombie waiting for its reaper does not).
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(stat), ") Z ")
}
