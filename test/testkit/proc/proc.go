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

// Package proc is the one supervisor of the child processes that tests, test
// servers and the local cluster start: it starts a command so that it dies with
// the test binary, waits for its exit in the background, and stops it with a
// signal and a grace period before SIGKILL. A command started in a process group
// of its own (SysProcAttr.Setpgid) is killed as a group, its children with it.
// It links no Kubernetes package, so runtime tests and benchmarks may use it.
package proc

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// Process is a started child process.
type Process struct {
	cmd   *exec.Cmd
	group bool
	done  chan struct{}
	err   error
}

// Start starts cmd and waits for its exit in the background; onExit, when not
// nil, runs once it exited (closing its log file, say). Unless cmd asks for
// another, its parent-death signal is SIGKILL: it dies with the test binary, even
// when that is killed.
func Start(cmd *exec.Cmd, onExit func()) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, group: cmd.SysProcAttr.Setpgid, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if onExit != nil {
			onExit()
		}
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited says whether the process exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process ended (exec.Cmd.Wait's error), once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Signal sends sig to the process (not its group).
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill sends SIGKILL (to the group, when the process leads one) and waits for
// the exit.
func (p *Process) Kill() {
	pid := p.Pid()
	if p.group {
		pid = -pid
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-p.done
}

// Stop sends sig and waits up to grace for the exit; then it kills the process
// (Kill) and says so in its error.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) error {
	_ = p.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("did not end within %s of %v; killed", grace, sig)
	}
}
