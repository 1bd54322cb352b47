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
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// initScript runs inside the container's private mount namespace (unshare -m
// --propagation private, so nothing leaks to the host's mount table). It first opens every
// volume source, then bind-mounts them through /proc/self/fd in order, so that a volume
// mounted over a parent of another source (an emptyDir at /tmp while the cluster folder is
// under /tmp) cannot hide it. Missing mount points are created (on the host's filesystem
// when the parent is not a volume: an empty folder or file, left in place because other
// clusters may be using it, and never written into on the host). Then it makes the root
// read-only when asked, changes to the working folder and execs the container's command,
// which keeps the pid we started. Paths arrive as arguments, never inside the script text.
const initScript = `set -e
fds=(); dsts=(); kinds=(); types=(); rootro=; wd=
while [ "$1" != "--" ]; do
  case "$1" in
    bind|robind) exec {fd}<"$3"; kinds+=("$1"); types+=("$2"); fds+=("$fd"); dsts+=("$4"); shift 4 ;;
    rootro) rootro=1; shift ;;
    cd) wd="$2"; shift 2 ;;
    *) echo "localcluster-init: unknown step $1" >&2; exit 127 ;;
  esac
done
shift
for i in "${!fds[@]}"; do
  dst="${dsts[$i]}"
  if [ ! -e "$dst" ]; then
    if [ "${types[$i]}" = d ]; then mkdir -p "$dst"; else mkdir -p "$(dirname "$dst")"; : >"$dst"; fi
  fi
  mount --no-canonicalize --bind "/proc/self/fd/${fds[$i]}" "$dst"
  if [ "${kinds[$i]}" = robind ]; then mount -o remount,bind,ro "$dst"; fi
  fd="${fds[$i]}"; exec {fd}<&-
done
if [ -n "$rootro" ]; then mount -o remount,bind,ro /; fi
if [ -n "$wd" ]; then cd "$wd"; fi
exec "$@"
`

// container runs one container of a pod as a local process, restarting it per the pod's
// restartPolicy, and probes it.
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
	if err == nil {
		var logFile *os.File
		logFile, err = os.OpenFile(filepath.Join(c.pw.k.dir, "logs", fmt.Sprintf("%s_%s_%s.log", c.pw.ns, c.pw.name, c.spec.Name)),
			os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			cmd.Stdout, cmd.Stderr = logFile, logFile
			err = cmd.Start()
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

	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
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
		c.kill(cmd.Process.Pid, grace, exited)
	case <-ctx.Done():
		c.kill(cmd.Process.Pid, 0, exited)
	case why := <-c.killReq:
		c.logf("%s, restarting", why)
		c.kill(cmd.Process.Pid, c.probeGrace(), exited)
	}
	cancelProbes()
	probes.Wait()
	// A container's processes go with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

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
func (c *container) kill(pid int, grace time.Duration, exited <-chan struct{}) {
	if grace > 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-exited:
			return
		case <-time.After(grace):
			c.logf("still running %s after SIGTERM, sending SIGKILL", grace)
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
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

func probeTiming(p *corev1.Probe) (delay, period time.Duration, success, failure int32) {
	period, success, failure = 10*time.Second, 1, 3
	if p.PeriodSeconds > 0 {
		period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.SuccessThreshold > 0 {
		success = p.SuccessThreshold
	}
	if p.FailureThreshold > 0 {
		failure = p.FailureThreshold
	}
	return time.Duration(p.InitialDelaySeconds) * time.Second, period, success, failure
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (c *container) startupLoop(ctx context.Context, startedCh chan struct{}) {
	markStarted := func() {
		c.mu.Lock()
		c.started = true
		c.mu.Unlock()
		close(startedCh)
		c.pw.markDirty()
	}
	p := c.spec.StartupProbe
	if p == nil || c.init {
		markStarted()
		return
	}
	delay, period, _, failure := probeTiming(p)
	if !sleepCtx(ctx, delay) {
		return
	}
	fails := int32(0)
	for {
		ok, msg := c.probe(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if ok {
			markStarted()
			return
		}
		if fails++; fails >= failure {
			c.requestKill("startup probe failed: " + msg)
			return
		}
		if !sleepCtx(ctx, period) {
			return
		}
	}
}

func (c *container) setReady(ready bool) {
	c.mu.Lock()
	changed := c.ready != ready
	c.ready = ready
	c.mu.Unlock()
	if changed {
		c.pw.markDirty()
	}
}

func (c *container) readinessLoop(ctx context.Context, startedCh chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-startedCh:
	}
	p := c.spec.ReadinessProbe
	if c.init {
		return
	}
	if p == nil {
		c.setReady(true)
		return
	}
	delay, period, success, failure := probeTiming(p)
	if !sleepCtx(ctx, delay) {
		return
	}
	var oks, fails int32
	for {
		ok, _ := c.probe(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if ok {
			oks, fails = oks+1, 0
			if oks >= success {
				c.setReady(true)
			}
		} else {
			oks, fails = 0, fails+1
			if fails >= failure {
				c.setReady(false)
			}
		}
		if !sleepCtx(ctx, period) {
			return
		}
	}
}

func (c *container) livenessLoop(ctx context.Context, startedCh chan struct{}) {
	p := c.spec.LivenessProbe
	if p == nil || c.init {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-startedCh:
	}
	delay, period, _, failure := probeTiming(p)
	if !sleepCtx(ctx, delay) {
		return
	}
	fails := int32(0)
	for {
		ok, msg := c.probe(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if ok {
			fails = 0
		} else if fails++; fails >= failure {
			c.requestKill("liveness probe failed: " + msg)
			return
		}
		if !sleepCtx(ctx, period) {
			return
		}
	}
}

// probe runs one check: httpGet and tcpSocket against the pod's address, exec inside the
// container's mount namespace (nsenter). gRPC probes are not supported and always fail.
func (c *container) probe(ctx context.Context, p *corev1.Probe) (bool, string) {
	timeout := time.Second
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.pw.mu.Lock()
	podIP := c.pw.ip
	c.pw.mu.Unlock()
	switch {
	case p.HTTPGet != nil:
		host := p.HTTPGet.Host
		if host == "" {
			host = podIP
		}
		port, err := c.resolvePort(p.HTTPGet.Port)
		if err != nil {
			return false, err.Error()
		}
		scheme := strings.ToLower(string(p.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		path := p.HTTPGet.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path), nil)
		if err != nil {
			return false, err.Error()
		}
		req.Header.Set("User-Agent", "kube-probe/1.37")
		for _, h := range p.HTTPGet.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}, // probes do not verify, like the kubelet's
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return true, ""
	case p.TCPSocket != nil:
		host := p.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		port, err := c.resolvePort(p.TCPSocket.Port)
		if err != nil {
			return false, err.Error()
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		_ = conn.Close()
		return true, ""
	case p.Exec != nil && len(p.Exec.Command) > 0:
		pid := c.pid()
		c.mu.Lock()
		env := c.env
		c.mu.Unlock()
		folder, _, _ := c.pw.k.imageFolder(c.spec.Image)
		bin, err := resolveBinary(folder, p.Exec.Command[0])
		if err != nil {
			return false, err.Error()
		}
		args := append([]string{"-t", strconv.Itoa(pid), "-m", "--"}, c.userPrefix()...)
		args = append(append(args, bin), p.Exec.Command[1:]...)
		cmd := exec.CommandContext(ctx, "nsenter", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return false, fmt.Sprintf("exec probe: %v: %s", err, strings.TrimSpace(string(out)))
		}
		return true, ""
	case p.GRPC != nil:
		return false, "gRPC probes are not supported by the local cluster's process kubelet"
	}
	return false, "probe has no handler"
}

func (c *container) resolvePort(port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.spec.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("probe port %q names no port of container %q", port.StrVal, c.spec.Name)
}

// userPrefix returns the setpriv command that switches to the container's runAsUser and
// runAsGroup, or nothing to run as root.
func (c *container) userPrefix() []string {
	uid, gid, groups, ok := c.identity()
	if !ok {
		return nil
	}
	args := []string{"setpriv", "--reuid=" + strconv.FormatInt(uid, 10), "--regid=" + strconv.FormatInt(gid, 10), "--pdeathsig=KILL"}
	if len(groups) == 0 {
		return append(args, "--clear-groups", "--")
	}
	gs := make([]string, len(groups))
	for i, g := range groups {
		gs[i] = strconv.FormatInt(g, 10)
	}
	return append(args, "--groups="+strings.Join(gs, ","), "--")
}

// identity resolves runAsUser/runAsGroup from the container's and the pod's security
// contexts. runAsNonRoot without runAsUser means the image's USER; the Conveyor image runs
// as 65532 (distroless nonroot), so that is what we use.
func (c *container) identity() (uid, gid int64, groups []int64, ok bool) {
	pod := c.pw.snapshotPod()
	var runAsUser, runAsGroup *int64
	var nonRoot bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		runAsUser, runAsGroup = psc.RunAsUser, psc.RunAsGroup
		nonRoot = psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
		groups = append(groups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			groups = append(groups, *psc.FSGroup)
		}
	}
	if sc := c.spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			runAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
	}
	switch {
	case runAsUser != nil:
		uid = *runAsUser
	case nonRoot:
		uid = 65532
	default:
		return 0, 0, nil, false
	}
	gid = uid
	if runAsGroup != nil {
		gid = *runAsGroup
	}
	return uid, gid, groups, true
}

// buildCmd assembles `unshare -m --propagation private -- /bin/bash -c initScript ...` for
// the container: mounts, working folder, user and the command with its expanded args.
func (c *container) buildCmd(ctx context.Context) (*exec.Cmd, error) {
	pod := c.pw.snapshotPod()
	folder, entry, ok := c.pw.k.imageFolder(c.spec.Image)
	if !ok {
		return nil, fmt.Errorf("image %q maps to no local folder", c.spec.Image)
	}
	env, err := c.pw.containerEnv(ctx, pod, &c.spec)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	argv := c.spec.Command
	if len(argv) == 0 {
		argv = entry
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %q has no command and image %q no entrypoint (localcluster Options.Entrypoints)", c.spec.Name, c.spec.Image)
	}
	argv = append(expandAll(argv, vars), expandAll(c.spec.Args, vars)...)
	bin, err := resolveBinary(folder, argv[0])
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.spec.Name, err)
	}
	if uid, _, _, ok := c.identity(); ok && uid == 0 && c.nonRootRequired(pod) {
		return nil, fmt.Errorf("container %q has runAsNonRoot and would run as root (runAsUser 0)", c.spec.Name)
	}
	mounts, err := c.pw.mountsFor(&c.spec)
	if err != nil {
		return nil, err
	}
	// The image's binaries appear at /usr/local/bin, where Conveyor's Dockerfile puts them,
	// read-only and below the volumes (a volume over /usr/local/bin hides them, as in a
	// real container). The host's /usr/local/bin is hidden inside the pod.
	steps := []string{"robind", "d", folder, imageBinDir}
	for _, m := range mounts {
		kind := "bind"
		if m.readOnly {
			kind = "robind"
		}
		typ := "d"
		if !m.dir {
			typ = "f"
		}
		steps = append(steps, kind, typ, m.src, m.dst)
	}
	// readOnlyRootFilesystem: the root mount becomes read-only inside the namespace only.
	// Other host mounts under / (such as /dev, /proc, /tmp if it is its own filesystem)
	// stay as they are, so this is an approximation of a container's read-only root.
	if sc := c.spec.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		steps = append(steps, "rootro")
	}
	if c.spec.WorkingDir != "" {
		steps = append(steps, "cd", c.spec.WorkingDir)
	}
	steps = append(steps, "--")
	steps = append(steps, c.userPrefix()...)
	steps = append(steps, bin)
	steps = append(steps, argv[1:]...)
	args := append([]string{"-m", "--propagation", "private", "--", "/bin/bash", "-c", initScript, "localcluster-init"}, steps...)
	cmd := exec.Command("unshare", args...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.mu.Lock()
	c.env = env
	c.mu.Unlock()
	return cmd, nil
}

func (c *container) nonRootRequired(pod *corev1.Pod) bool {
	if sc := c.spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		return *sc.RunAsNonRoot
	}
	return pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsNonRoot != nil && *pod.Spec.SecurityContext.RunAsNonRoot
}

// imageBinDir is where a pod sees its image's binaries.
const imageBinDir = "/usr/local/bin"

// resolveBinary finds a command in the image folder by its base name (the image's
// /usr/local/bin/conveyor is folder/conveyor) and returns its path inside the pod; failing
// that, an absolute host path or a name on the host's PATH (for tests that use host tools).
func resolveBinary(folder, name string) (string, error) {
	if folder != "" {
		p := filepath.Join(folder, filepath.Base(name))
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return filepath.Join(imageBinDir, filepath.Base(name)), nil
		}
	}
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err == nil {
			return name, nil
		}
	} else if !strings.Contains(name, "/") {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q: no %s in image folder %s", name, filepath.Base(name), folder)
}

// expandAll applies Kubernetes' $(VAR) expansion: $(NAME) becomes the variable's value when
// it is defined and stays as written otherwise; $$ is a literal $.
func expandAll(in []string, vars map[string]string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vars)
	}
	return out
}

func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
