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

package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

type container struct {
	pw   *podWorker
	spec corev1.Container
	init bool

	mu          sync.Mutex
	state       corev1.ContainerState
	last        corev1.ContainerState
	restarts    int32
	ready       bool
	started     bool
	everStarted bool
	finished    bool
	exitCode    int32
	proc        *os.Process
	env         []string
	killReq     chan string
	startedCh   chan struct{}
}

func newContainer(pw *podWorker, spec corev1.Container, init bool) *container {
	return &container{pw: pw, spec: spec, init: init, killReq: make(chan string, 1)}
}

func (c *container) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return 0
	}
	return c.proc.Pid
}

func (c *container) succeeded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finished && c.exitCode == 0
}

// progress reports whether the container ever started, whether it finished for good (no
// more restarts) and its last exit code.
func (c *container) progress() (bool, bool, int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.everStarted, c.finished, c.exitCode
}

func (c *container) status(waitingReason, waitingMsg string) corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	started := c.started
	cs := corev1.ContainerStatus{
		Name: c.spec.Name, Image: c.spec.Image, ImageID: "localcluster://" + c.spec.Image,
		RestartCount: c.restarts, Ready: c.ready, Started: &started,
		State: c.state, LastTerminationState: c.last,
	}
	if c.state.Waiting == nil && c.state.Running == nil && c.state.Terminated == nil {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waitingReason, Message: waitingMsg}
	}
	if c.proc != nil {
		cs.ContainerID = fmt.Sprintf("localcluster://%d", c.proc.Pid)
	}
	return cs
}

func (c *container) logf(format string, args ...any) {
	c.pw.logf("container %s: "+format, append([]any{c.spec.Name}, args...)...)
}

func (c *container) restartPolicy() corev1.RestartPolicy {
	p := c.pw.snapshotPod().Spec.RestartPolicy
	if c.init && p == corev1.RestartPolicyAlways {
		return corev1.RestartPolicyOnFailure // regular init containers retry until they succeed
	}
	if p == "" {
		return corev1.RestartPolicyAlways
	}
	return p
}

// backoff is the kubelet's CrashLoopBackOff: immediate first restart, then base, 2*base,
// ... up to 5 minutes.
func backoff(base time.Duration, crashes int) time.Duration {
	if crashes <= 1 {
		return 0
	}
	d := base
	for i := 2; i < crashes && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// runLoop runs the container until it finishes for good or the pod terminates.
func (c *container) runLoop(ctx context.Context) {
	crashes := 0
	for {
		if c.pw.stopping() || ctx.Err() != nil {
			return
		}
		began := time.Now()
		code := c.runOnce(ctx)
		c.pw.markDirty()
		if c.pw.stopping() || ctx.Err() != nil {
			c.mu.Lock()
			c.finished = true
			c.mu.Unlock()
			return
		}
		policy := c.restartPolicy()
		if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && code == 0) {
			c.mu.Lock()
			c.finished = true
			c.mu.Unlock()
			c.pw.markDirty()
			return
		}
		if time.Since(began) > 10*time.Minute {
			crashes = 0
		}
		crashes++
		c.pw.waitRestartHold(ctx)
		if d := backoff(c.pw.k.backoff, crashes); d > 0 {
			c.mu.Lock()
			c.last, c.state = c.state, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, c.spec.Name, c.pw.name),
			}}
			c.mu.Unlock()
			c.pw.markDirty()
			select {
			case <-c.pw.stopCh:
				return
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
	}
}

// runOnce starts the process, probes it and waits for it to end; it returns the exit code.
func (c *container) runOnce(ctx context.Context) int32 {
	cmd, err := c.buildCmd(ctx)
	var p *proc.Process
	if err == nil {
		var logFile *os.File
		logFile, err = os.OpenFile(filepath.Join(c.pw.k.dir, "logs", fmt.Sprintf("%s_%s_%s.log", c.pw.ns, c.pw.name, c.spec.Name)),
			os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			cmd.Stdout, cmd.Stderr = logFile, logFile
			p, err = proc.Start(cmd, nil)
			_ = logFile.Close() // the child has its own descriptor
		}
	}
	if err != nil {
		c.logf("cannot start: %v", err)
		c.setTerminated(128, "StartError", err.Error(), 0, now())
		return 128
	}
	startedAt := now()
	startedCh := make(chan struct{})
	c.mu.Lock()
	if c.state.Terminated != nil {
		c.last = c.state
	} else if c.state.Waiting != nil && c.last.Terminated == nil {
		c.last = corev1.ContainerState{}
	}
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}}
	c.proc, c.everStarted, c.ready, c.started = cmd.Process, true, false, false
	c.startedCh = startedCh
	select {
	case <-c.killReq: // drop a stale request from the previous run
	default:
	}
	c.mu.Unlock()
	c.logf("started pid %d: %s", cmd.Process.Pid, strings.Join(cmd.Args[len(cmd.Args)-c.argc():], " "))
	c.pw.markDirty()

	exited := p.Done()
	probeCtx, cancelProbes := context.WithCancel(ctx)
	var probes sync.WaitGroup
	probes.Add(3)
	go func() { defer probes.Done(); c.startupLoop(probeCtx, startedCh) }()
	go func() { defer probes.Done(); c.readinessLoop(probeCtx, startedCh) }()
	go func() { defer probes.Done(); c.livenessLoop(probeCtx, startedCh) }()

	select {
	case <-exited:
	case <-c.pw.stopCh:
		c.pw.mu.Lock()
		grace := c.pw.grace
		c.pw.mu.Unlock()
		c.kill(p, grace)
	case <-ctx.Done():
		c.kill(p, 0)
	case why := <-c.killReq:
		c.logf("%s, restarting", why)
		c.kill(p, c.probeGrace())
	}
	cancelProbes()
	probes.Wait()
	// A container's processes go with it.
	p.Kill()

	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	code, reason, signal := int32(ws.ExitStatus()), "Completed", int32(0)
	if ws.Signaled() {
		signal = int32(ws.Signal())
		code = 128 + signal
	}
	if code != 0 {
		reason = "Error"
	}
	c.logf("exited with code %d", code)
	c.setTerminated(code, reason, "", signal, startedAt)
	return code
}

func (c *container) argc() int { return len(c.spec.Args) + max(len(c.spec.Command), 1) }

func (c *container) setTerminated(code int32, reason, msg string, signal int32, startedAt metav1.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Waiting != nil && c.state.Waiting.Reason == "CrashLoopBackOff" {
		// keep last as it is
	} else if c.state.Terminated != nil {
		c.last = c.state
	}
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Signal: signal, Reason: reason, Message: msg, StartedAt: startedAt, FinishedAt: now(),
	}}
	c.exitCode, c.ready, c.started = code, false, false
}

// kill sends SIGTERM, waits up to grace, then SIGKILLs the process group.
func (c *container) kill(p *proc.Process, grace time.Duration) {
	if grace <= 0 {
		p.Kill()
		return
	}
	if err := p.Stop(syscall.SIGTERM, grace); err != nil {
		c.logf("still running %s after SIGTERM: SIGKILL sent", grace)
	}
}

func (c *container) probeGrace() time.Duration {
	for _, p := range []*corev1.Probe{c.spec.LivenessProbe, c.spec.StartupProbe} {
		if p != nil && p.TerminationGracePeriodSeconds != nil {
			return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
		}
	}
	if g := c.pw.snapshotPod().Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

func (c *container) requestKill(why string) {
	select {
	case c.killReq <- why:
	default:
	}
}
