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

// Package harness runs a Conveyor cluster made of conveyor-worker processes
// against an in-process kfake broker: it builds the worker binary, writes
// one worker config per process (each worker on its own loopback address),
// starts, terminates and kills workers, talks to their REST API with the
// cluster's bearer token, and reads the status topic to count task starts.
// The multi-process tests in test/cluster and the benchmark program
// test/bench/cluster use it; it takes no *testing.T so both can.
package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

// BuildWorker builds ./runtime/cmd/conveyor-worker of the module that holds
// the current directory into dir and returns the binary's path. The Go
// build cache makes repeated builds cheap.
func BuildWorker(ctx context.Context, dir string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "conveyor-worker")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./runtime/cmd/conveyor-worker")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./runtime/cmd/conveyor-worker: %w\n%s", err, out)
	}
	return bin, nil
}

// ModuleRoot returns the folder holding the module's go.mod, searched from
// the current directory upwards.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/conveyor-dev/conveyor\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/conveyor-dev/conveyor above the current directory: run from inside the module")
		}
		dir = parent
	}
}

// Options configure a Cluster of worker processes.
type Options struct {
	// Binary is the conveyor-worker executable (see BuildWorker). Required.
	Binary string
	// Dir holds the worker configs, the token file and the worker logs. Required.
	Dir string
	// Bootstrap is the Kafka address (host:port). Required.
	Bootstrap string
	// GroupID defaults to "conveyor-cluster-test".
	GroupID string
	// SessionTimeout (session.timeout.ms) defaults to 3s; the broker must
	// allow it (kfake: GroupMinSessionTimeout).
	SessionTimeout time.Duration
	// HeartbeatInterval (heartbeat.interval.ms) defaults to 300ms.
	HeartbeatInterval time.Duration
	// RebalanceTimeout (rebalance.timeout.ms) defaults to 10s.
	RebalanceTimeout time.Duration
	// LostWorkerDelay (scheduled.rebalance.max.delay.ms) defaults to 2s.
	LostWorkerDelay time.Duration
	// OffsetFlushInterval (offset.flush.interval.ms) defaults to 500ms.
	OffsetFlushInterval time.Duration
	// Dynamic makes the workers dynamic group members; by default each
	// is a static member (group.instance.id = its name), as the operator
	// sets it up (the pod name).
	Dynamic bool
	// AddressIDs makes each worker's worker.id its REST host:port, as the
	// operator's workers have it (POD_IP:8083, what the operator's status
	// reads take for a Ready worker); by default the id is the worker's name.
	AddressIDs bool
	// Extra are more "key=value" config lines, appended last (they win).
	Extra []string
	// PerWorker, when set, gives more "key=value" config lines for the
	// named worker, appended after Extra (worker.revision for a rolling
	// update, say).
	PerWorker func(name string) []string
	// Args, when set, gives more command-line arguments for the named
	// worker (--heapprofile FILE, say).
	Args func(name string) []string
}

func (o *Options) defaults() error {
	if o.Binary == "" || o.Dir == "" || o.Bootstrap == "" {
		return errors.New("harness: Options.Binary, Options.Dir and Options.Bootstrap are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.SessionTimeout, 3*time.Second)
	def(&o.HeartbeatInterval, 300*time.Millisecond)
	def(&o.RebalanceTimeout, 10*time.Second)
	def(&o.LostWorkerDelay, 2*time.Second)
	def(&o.OffsetFlushInterval, 500*time.Millisecond)
	if o.GroupID == "" {
		o.GroupID = "conveyor-cluster-test"
	}
	return nil
}

// Cluster is a set of conveyor-worker processes sharing one group.
type Cluster struct {
	opts      Options
	token     string
	tokenFile string
	// Each worker gets its own address 127.<a>.<b>.<n> and the same port,
	// so a restarted worker keeps its address and worker id; a and b are
	// random so parallel test binaries do not collide.
	prefix string
	port   int

	mu      sync.Mutex
	hosts   map[string]int // worker name -> n
	procs   []*Worker      // every process started, in order
	running map[string]*Worker
}

// NewCluster prepares a cluster; it starts no process.
func NewCluster(opts Options) (*Cluster, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, token: hex.EncodeToString(tok), hosts: map[string]int{}, running: map[string]*Worker{}}
	c.tokenFile = filepath.Join(opts.Dir, "rest-token")
	if err := os.WriteFile(c.tokenFile, []byte(c.token+"\n"), 0o600); err != nil {
		return nil, err
	}
	a, err := rand.Int(rand.Reader, big.NewInt(150))
	if err != nil {
		return nil, err
	}
	b, err := rand.Int(rand.Reader, big.NewInt(250))
	if err != nil {
		return nil, err
	}
	c.prefix = fmt.Sprintf("127.%d.%d.", 100+a.Int64(), 1+b.Int64())
	// One free port, probed on the first worker address.
	l, err := net.Listen("tcp", c.prefix+"1:0")
	if err != nil {
		return nil, fmt.Errorf("harness: finding a free port on %s1: %w", c.prefix, err)
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	return c, nil
}

// Token returns the REST bearer token every worker of the cluster requires.
func (c *Cluster) Token() string { return c.token }

// Options returns the cluster's options with defaults applied.
func (c *Cluster) Options() Options { return c.opts }

// Address returns the REST host:port of the named worker (assigned on
// first use; stable across restarts).
func (c *Cluster) Address(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addressLocked(name)
}

func (c *Cluster) addressLocked(name string) string {
	n, ok := c.hosts[name]
	if !ok {
		n = len(c.hosts) + 1
		c.hosts[name] = n
	}
	return net.JoinHostPort(c.prefix+strconv.Itoa(n), strconv.Itoa(c.port))
}

// WorkerConfig returns the properties a worker named name runs with.
func (c *Cluster) WorkerConfig(name string) string {
	host, port, _ := net.SplitHostPort(c.Address(name))
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	id := name
	if c.opts.AddressIDs {
		id = net.JoinHostPort(host, port)
	}
	lines := []string{
		"bootstrap.servers=" + c.opts.Bootstrap,
		"group.id=" + c.opts.GroupID,
		"worker.id=" + id,
		"internal.topics.create=true",
		"offset.storage.partitions=5",
		"status.storage.partitions=3",
		"rest.host.name=" + host,
		"rest.port=" + port,
		"rest.auth.token.file=" + c.tokenFile,
		"session.timeout.ms=" + ms(c.opts.SessionTimeout),
		"heartbeat.interval.ms=" + ms(c.opts.HeartbeatInterval),
		"rebalance.timeout.ms=" + ms(c.opts.RebalanceTimeout),
		"scheduled.rebalance.max.delay.ms=" + ms(c.opts.LostWorkerDelay),
		"offset.flush.interval.ms=" + ms(c.opts.OffsetFlushInterval),
		"task.shutdown.graceful.timeout.ms=5000",
		// A SIGKILLed worker's sink consumers leave their groups only when
		// their sessions time out; franz-go heartbeats every 3s, so 6s is
		// the shortest safe session.
		"consumer.session.timeout.ms=6000",
		// kfake counts a sink consumer dropped while it waited in SyncGroup
		// (replaced by its restarted process, removed, or its session over)
		// as one that joined, so the group's next rebalance completes only
		// at its deadline, the rebalance timeout after the last JoinGroup;
		// Kafka completes it once the live members joined. 20s instead of
		// franz-go's 60s keeps that within the tests' waits.
		"consumer.rebalance.timeout.ms=20000",
		// File connectors of the tests read and write under the temporary
		// folder (the workers' own token file there stays refused).
		"file.connectors.allowed.paths=" + os.TempDir(),
	}
	if !c.opts.Dynamic {
		lines = append(lines, "group.instance.id="+name)
	}
	lines = append(lines, c.opts.Extra...)
	if c.opts.PerWorker != nil {
		lines = append(lines, c.opts.PerWorker(name)...)
	}
	return strings.Join(lines, "\n") + "\n"
}

// Worker is one conveyor-worker process.
type Worker struct {
	// Name is the worker's name and worker.id.
	Name string
	// URL is the worker's REST base URL.
	URL string
	// LogPath holds the process's stdout and stderr.
	LogPath string
	// Started is when the process was started.
	Started time.Time
	// REST talks to this worker with the cluster's token.
	REST *Client

	proc *proc.Process
}

// Start starts a worker process named name (its worker.id) and waits until
// its REST API answers /health. A name used before gets the same address.
func (c *Cluster) Start(ctx context.Context, name string) (*Worker, error) {
	w, err := c.Launch(name)
	if err != nil {
		return nil, err
	}
	err = testkit.Until(ctx, 60*time.Second, "worker "+name+" serving /health", func(ctx context.Context) (bool, error) {
		if w.Exited() {
			return false, fmt.Errorf("worker %s exited: %v", name, w.proc.Err())
		}
		code, err := w.REST.Do(ctx, "GET", "/health", nil, nil)
		return err == nil && code == 200, err
	})
	if err != nil {
		if w.Exited() {
			return nil, fmt.Errorf("harness: worker %s exited before serving: %v\n%s", name, w.proc.Err(), Tail(w.LogPath, 3000))
		}
		return nil, err
	}
	return w, nil
}

// Launch starts a worker process named name and returns at once, as a
// kubelet restarting a container does.
func (c *Cluster) Launch(name string) (*Worker, error) {
	c.mu.Lock()
	if w := c.running[name]; w != nil && !w.Exited() {
		c.mu.Unlock()
		return nil, fmt.Errorf("harness: worker %s is already running", name)
	}
	addr := c.addressLocked(name)
	incarnation := 0
	for _, p := range c.procs {
		if p.Name == name {
			incarnation++
		}
	}
	c.mu.Unlock()

	cfgPath := filepath.Join(c.opts.Dir, name+".properties")
	if err := os.WriteFile(cfgPath, []byte(c.WorkerConfig(name)), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.opts.Dir, fmt.Sprintf("%s.%d.log", name, incarnation))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"--config", cfgPath}
	if c.opts.Args != nil {
		args = append(args, c.opts.Args(name)...)
	}
	cmd := exec.Command(c.opts.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	w := &Worker{Name: name, URL: "http://" + addr, LogPath: logPath}
	w.REST = NewClient(w.URL, c.token)
	w.Started = time.Now()
	if w.proc, err = proc.Start(cmd, func() { logFile.Close() }); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("harness: starting worker %s: %w", name, err)
	}
	c.mu.Lock()
	c.procs = append(c.procs, w)
	c.running[name] = w
	c.mu.Unlock()
	return w, nil
}

// Worker returns the running process of the named worker, or nil.
func (c *Cluster) Worker(name string) *Worker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.running[name]; w != nil && !w.Exited() {
		return w
	}
	return nil
}

// Running returns the live workers, sorted by name.
func (c *Cluster) Running() []*Worker {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Worker
	for _, w := range c.running {
		if !w.Exited() {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Leader returns the live worker that every live worker names as the group
// leader, waiting up to timeout for them to agree.
func (c *Cluster) Leader(ctx context.Context, timeout time.Duration) (*Worker, error) {
	var leader *Worker
	err := testkit.Until(ctx, timeout, "the workers to agree on a leader", func(ctx context.Context) (bool, error) {
		leader = nil
		ws := c.Running()
		var url string
		for i, w := range ws {
			u, err := w.REST.Leader(ctx)
			if err != nil || u == "" || (i > 0 && u != url) {
				return false, err
			}
			url = u
		}
		for _, w := range ws {
			if w.URL == url {
				leader = w
			}
		}
		return leader != nil, nil
	})
	return leader, err
}

// Any returns a live worker (the first by name), or nil.
func (c *Cluster) Any() *Worker {
	if ws := c.Running(); len(ws) > 0 {
		return ws[0]
	}
	return nil
}

// Close kills every process still running.
func (c *Cluster) Close() {
	c.mu.Lock()
	procs := append([]*Worker(nil), c.procs...)
	c.mu.Unlock()
	for _, w := range procs {
		_ = w.Kill()
	}
}

// Logs returns the tail (max bytes each) of every process's log, oldest
// process first, without the access-log lines of successful REST requests
// (the tests poll statuses often).
func (c *Cluster) Logs(max int) string {
	c.mu.Lock()
	procs := append([]*Worker(nil), c.procs...)
	c.mu.Unlock()
	var b strings.Builder
	for _, w := range procs {
		fmt.Fprintf(&b, "----- %s (%s) -----\n%s\n", w.Name, w.LogPath, Tail(w.LogPath, max, quietREST))
	}
	return b.String()
}

// quietREST drops the access-log lines of successful REST requests.
func quietREST(line string) bool {
	return strings.Contains(line, `msg="REST request"`) && strings.Contains(line, " status=2")
}

// Tail returns the last max bytes of a file, without the lines that a
// drop function (if any) matches.
func Tail(path string, max int, drop ...func(string) bool) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(drop) > 0 {
		var kept []string
		for _, l := range strings.Split(string(b), "\n") {
			dropped := false
			for _, d := range drop {
				dropped = dropped || d(l)
			}
			if !dropped {
				kept = append(kept, l)
			}
		}
		b = []byte(strings.Join(kept, "\n"))
	}
	if len(b) > max {
		b = b[len(b)-max:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// Exited reports whether the process ended.
func (w *Worker) Exited() bool { return w.proc.Exited() }

// Done is closed when the process ended.
func (w *Worker) Done() <-chan struct{} { return w.proc.Done() }

// ExitErr waits for the process to end and returns how it ended (nil: exit
// code 0).
func (w *Worker) ExitErr() error { return w.proc.Err() }

// Pid returns the process id.
func (w *Worker) Pid() int { return w.proc.Pid() }

// Kill sends SIGKILL and waits for the process to end.
func (w *Worker) Kill() error {
	if w.Exited() {
		return nil
	}
	if err := w.proc.Signal(syscall.SIGKILL); err != nil && !w.Exited() {
		return fmt.Errorf("harness: SIGKILL to worker %s: %w", w.Name, err)
	}
	<-w.proc.Done()
	return nil
}

// Terminate sends SIGTERM; it does not wait (see Wait).
func (w *Worker) Terminate() error {
	if err := w.proc.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("harness: SIGTERM to worker %s: %w", w.Name, err)
	}
	return nil
}

// Wait waits up to timeout for the process to end and returns its exit
// error.
func (w *Worker) Wait(timeout time.Duration) error {
	select {
	case <-w.proc.Done():
		if err := w.proc.Err(); err != nil {
			return fmt.Errorf("worker %s exited: %w", w.Name, err)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("worker %s still running %s after the signal", w.Name, timeout)
	}
}

// LogLines returns the lines of every process's log that contain all of
// the given substrings, oldest process first.
func (c *Cluster) LogLines(contains ...string) []string {
	c.mu.Lock()
	procs := append([]*Worker(nil), c.procs...)
	c.mu.Unlock()
	var out []string
	for _, w := range procs {
		b, err := os.ReadFile(w.LogPath)
		if err != nil {
			continue
		}
	lines:
		for _, l := range strings.Split(string(b), "\n") {
			for _, s := range contains {
				if !strings.Contains(l, s) {
					continue lines
				}
			}
			out = append(out, l)
		}
	}
	return out
}
