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
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

// kafkaProcess is a standalone kfake broker (test/localcluster/cmd/kafka): the cluster's
// Kafka ("kafka") and, with Options.SecureKafka, a second one speaking only TLS and SASL
// ("kafka-secure"). name names its data folder, log and faults file.
type kafkaProcess struct {
	name                  string
	args                  []string // flags besides port, data and faults
	bin, dataDir, logPath string
	faultsPath            string // kafkafault.Faults the broker re-reads
	faultsGen             int64
	port                  int
	addr                  string
	proc                  *proc.Process
	logf                  func(string, ...any)
	netns                 *netNS
}

func startKafka(ctx context.Context, dir, name, bin string, port int, args []string, ns *netNS, logf func(string, ...any)) (*kafkaProcess, error) {
	if bin == "" {
		root, err := ModuleRoot(ctx)
		if err != nil {
			return nil, fmt.Errorf("building the Kafka broker: set Options.KafkaBinary or run inside the module: %w", err)
		}
		bin = filepath.Join(dir, "bin", "conveyor-kafka")
		logf("building the Kafka broker (test/localcluster/cmd/kafka)")
		if err := goBuild(ctx, root, bin, "./test/localcluster/cmd/kafka"); err != nil {
			return nil, err
		}
	}
	if ns != nil {
		// The broker listens on 127.0.0.1:port inside the namespace, where the pods reach
		// it; a forwarder on the same port outside lets this process, kcat and the user's
		// shell reach it too, with the same advertised address.
		p, err := ns.listen(port, "")
		if err != nil {
			return nil, err
		}
		port = p
	} else if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port for Kafka: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	k := &kafkaProcess{
		name: name, args: args, bin: bin, port: port, logf: logf, netns: ns,
		dataDir:    filepath.Join(dir, name),
		logPath:    filepath.Join(dir, "logs", name+".log"),
		faultsPath: filepath.Join(dir, name+"-faults.json"),
	}
	if err := k.start(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *kafkaProcess) start(ctx context.Context) error {
	logFile, err := os.OpenFile(k.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening Kafka log: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	cmd := k.netns.command(k.bin, append([]string{"--port", strconv.Itoa(k.port), "--data-dir", k.dataDir, "--faults-file", k.faultsPath}, k.args...)...)
	cmd.Stderr = logFile
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("kafka stdout: %w", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if k.proc, err = proc.Start(cmd, nil); err != nil {
		return fmt.Errorf("starting Kafka broker %s: %w", k.bin, err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
			_, _ = fmt.Fprintln(logFile, sc.Text())
		}
		if first {
			close(lines)
		}
	}()
	select {
	case line, ok := <-lines:
		addr, found := strings.CutPrefix(line, "KAFKA_ADDR=")
		if !ok || !found {
			_ = k.stop()
			return fmt.Errorf("Kafka broker did not start (see %s)", k.logPath)
		}
		k.addr = addr
	case <-time.After(60 * time.Second):
		_ = k.stop()
		return fmt.Errorf("Kafka broker did not print its address within 60s (see %s)", k.logPath)
	case <-ctx.Done():
		_ = k.stop()
		return ctx.Err()
	}
	k.logf("%s (kfake, pid %d) on %s, data in %s", k.name, cmd.Process.Pid, k.addr, k.dataDir)
	return nil
}

func (k *kafkaProcess) stop() error {
	if k.proc == nil {
		return nil
	}
	if err := k.proc.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		return fmt.Errorf("Kafka broker %w", err)
	}
	return nil
}

func (k *kafkaProcess) restart(ctx context.Context) error {
	if err := k.stop(); err != nil {
		return err
	}
	return k.start(ctx)
}
