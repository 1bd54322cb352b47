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

package estest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

// EnvZinc names the ZincSearch binary; when unset, FindZinc runs
// hack/zincsearch.sh, which builds it once into ~/.cache/conveyor.
const EnvZinc = "CONVEYOR_ZINCSEARCH"

// Zinc is a ZincSearch server process: a real server with an
// Elasticsearch-compatible API under /es, for the happy path only (its
// _bulk answers every item 200 and never "errors": true).
type Zinc struct {
	// URL is the Elasticsearch API's base URL (http://127.0.0.1:PORT/es).
	URL string
	// User and Password are the admin's, for Basic authentication.
	User, Password string

	proc *proc.Process
	dir  string
}

// FindZinc returns the ZincSearch binary: $CONVEYOR_ZINCSEARCH, or what
// hack/zincsearch.sh prints (instant once cached).
func FindZinc() (string, error) {
	if p := os.Getenv(EnvZinc); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvZinc, p, err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		script := filepath.Join(dir, "hack", "zincsearch.sh")
		if _, err := os.Stat(script); err == nil {
			out, err := exec.Command(script).Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return "", fmt.Errorf("%s: %w\n%s", script, err, ee.Stderr)
				}
				return "", fmt.Errorf("%s: %w", script, err)
			}
			return strings.TrimSpace(string(out)), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("estest: no hack/zincsearch.sh above the current directory; set " + EnvZinc)
		}
		dir = parent
	}
}

// StartZinc starts ZincSearch on 127.0.0.1 and a free port, in a fresh
// data folder, with telemetry and error reporting off (both call outside
// when on), and waits until /healthz answers.
func StartZinc(ctx context.Context) (*Zinc, error) {
	bin, err := FindZinc()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "conveyor-zinc-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	z := &Zinc{URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/es", User: "admin", Password: "Zinc-Admin-Pw-1", dir: dir}
	logf, err := os.Create(filepath.Join(dir, "zincsearch.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"ZINC_FIRST_ADMIN_USER="+z.User, "ZINC_FIRST_ADMIN_PASSWORD="+z.Password,
		"ZINC_DATA_PATH="+filepath.Join(dir, "data"), "ZINC_SERVER_ADDRESS=127.0.0.1", "ZINC_SERVER_PORT="+strconv.Itoa(port),
		"ZINC_TELEMETRY=false", "ZINC_SENTRY=false", "ZINC_PROFILER=false", "GIN_MODE=release")
	cmd.Stdout, cmd.Stderr = logf, logf
	if z.proc, err = proc.Start(cmd, func() { logf.Close() }); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	health := "http://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-z.proc.Done():
			log, _ := os.ReadFile(filepath.Join(dir, "zincsearch.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("zincsearch exited before serving:\n%s", log)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return z, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			z.Close()
			return nil, fmt.Errorf("zincsearch on port %d not healthy within 60s", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Close kills the server and removes its data folder.
func (z *Zinc) Close() {
	z.proc.Kill()
	os.RemoveAll(z.dir)
}
