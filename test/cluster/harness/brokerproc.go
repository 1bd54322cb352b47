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

package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

// BrokerProcess is a kfake broker in a process of its own
// (test/localcluster/cmd/kafka), for a measurement of this process's memory
// that must not count the broker's.
type BrokerProcess struct {
	Addr string
	p    *proc.Process
}

// StartBrokerProcess builds the local cluster's kafka command into dir and
// starts it on a free loopback port with the same settings as StartBroker
// (topics created on demand, session timeouts down to 500ms); its log goes
// to dir/kafka.log.
func StartBrokerProcess(ctx context.Context, dir string) (*BrokerProcess, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "kafka")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/localcluster/cmd/kafka")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./test/localcluster/cmd/kafka: %w\n%s", err, out)
	}
	logFile, err := os.Create(filepath.Join(dir, "kafka.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-port", "0", "-group-min-session-timeout", "500ms")
	cmd.Stderr = logFile
	out, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	p, err := proc.Start(cmd, func() { logFile.Close() })
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the kafka process: %w", err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "KAFKA_ADDR="); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return &BrokerProcess{Addr: a, p: p}, nil
	case <-p.Done():
		return nil, fmt.Errorf("the kafka process exited before it listened (log: %s): %v", logFile.Name(), p.Err())
	case <-time.After(30 * time.Second):
		p.Kill()
		return nil, fmt.Errorf("the kafka process did not listen within 30s (log: %s)", logFile.Name())
	}
}

// Pid is the broker process's id.
func (b *BrokerProcess) Pid() int { return b.p.Pid() }

// Close stops the broker.
func (b *BrokerProcess) Close() error { return b.p.Stop(syscall.SIGTERM, 5*time.Second) }
