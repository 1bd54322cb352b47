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

// Package servers starts the real servers the sink connectors' tests and
// benchmarks write to, each on a free loopback port in a folder of its
// own: redis-server from Debian's packages (hack/redis.sh installs it) and
// versitygw, an S3 server on a POSIX folder (hack/versitygw.sh builds it
// into ~/.cache/conveyor). A server can be stopped, killed and started
// again on the same port and data, for outage tests. It takes no
// *testing.T, so benchmark programs can use it; see [T] for tests.
//
// Missing binaries fail (they do not skip): make test installs them.
//
// Every test server lives here: this package (Redis, S3, a schema
// registry), pgtest (a
// PostgreSQL server of its own) and estest (an Elasticsearch stand-in and
// ZincSearch).
package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

// process is one server process that can be stopped and started again
// with the same arguments.
type process struct {
	name  string
	bin   string
	args  []string
	env   []string
	log   string
	ready func(ctx context.Context) error

	mu   sync.Mutex
	proc *proc.Process
}

func (p *process) start(ctx context.Context) error {
	p.mu.Lock()
	if p.proc != nil {
		p.mu.Unlock()
		return fmt.Errorf("servers: %s is already running", p.name)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	pr, err := proc.Start(cmd, func() { f.Close() })
	if err != nil {
		f.Close()
		p.mu.Unlock()
		return fmt.Errorf("servers: starting %s: %w", p.name, err)
	}
	p.proc = pr
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		select {
		case <-pr.Done():
			p.mu.Lock()
			p.proc = nil
			p.mu.Unlock()
			return fmt.Errorf("servers: %s exited at start:\n%s", p.name, tail(p.log, 2000))
		default:
		}
		if last = p.ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			_ = p.signal(syscall.SIGKILL)
			return fmt.Errorf("servers: %s not ready in 30s (%v):\n%s", p.name, last, tail(p.log, 2000))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// signal sends sig and waits for the process to end.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	pr := p.proc
	p.proc = nil
	p.mu.Unlock()
	if pr == nil {
		return nil
	}
	if err := pr.Stop(sig, 20*time.Second); err != nil {
		return fmt.Errorf("servers: %s %w", p.name, err)
	}
	return nil
}

// Stop ends the server gracefully (SIGTERM) and waits for it.
func (p *process) Stop() error { return p.signal(syscall.SIGTERM) }

// Kill ends the server with SIGKILL and waits for it.
func (p *process) Kill() error { return p.signal(syscall.SIGKILL) }

// Restart starts the server again after Stop or Kill, on the same port
// and data.
func (p *process) Restart(ctx context.Context) error { return p.start(ctx) }

// Log returns the tail of the server's log.
func (p *process) Log() string { return tail(p.log, 4000) }

// freePort returns a port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// findBinary returns $env, else the first of candidates that exists (a
// name without a slash is looked up in PATH).
func findBinary(env, hint string, candidates ...string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		return "", fmt.Errorf("servers: %s=%s is not a file: %s", env, os.Getenv(env), hint)
	}
	for _, c := range candidates {
		if !strings.Contains(c, "/") {
			if p, err := exec.LookPath(c); err == nil {
				return p, nil
			}
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", errors.New("servers: " + hint + " (or set " + env + ")")
}

// cacheDir is where hack/ scripts cache tools: $CONVEYOR_CACHE, else
// ~/.cache/conveyor.
func cacheDir() string {
	if d := os.Getenv("CONVEYOR_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "conveyor")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "conveyor")
}

func itoa(n int) string { return strconv.Itoa(n) }
