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

// Package cluster holds the multi-process tests of issue 4: conveyor-worker
// processes forming one cluster on an in-process kfake broker, killed and
// terminated while records flow.
package cluster

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
)

// showLogs prints the worker logs of passing tests too.
var showLogs = flag.Bool("logs", false, "print the worker logs (without successful REST requests) even when a test passes")

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// workerBinary builds conveyor-worker once per test binary.
func workerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "conveyor-cluster-test-")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		binPath, buildErr = harness.BuildWorker(ctx, binDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// env is one test's broker and cluster; worker logs stay in t.TempDir and
// are printed when the test fails.
type env struct {
	t      *testing.T
	broker *harness.Broker
	c      *harness.Cluster
	dir    string
}

func newEnv(t *testing.T, opts harness.Options, kopts ...kfake.Opt) *env {
	t.Helper()
	b, err := harness.StartBroker(kopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	dir := t.TempDir()
	opts.Binary, opts.Dir, opts.Bootstrap = workerBinary(t), dir, b.Addr
	c, err := harness.NewCluster(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() || *showLogs {
			t.Logf("worker logs:\n%s", c.Logs(6000))
		}
	})
	return &env{t: t, broker: b, c: c, dir: dir}
}

func (e *env) start(ctx context.Context, names ...string) []*harness.Worker {
	e.t.Helper()
	ws, err := e.c.StartAll(ctx, names...)
	if err != nil {
		e.t.Fatal(err)
	}
	return ws
}

// waitPlacement waits until cond holds for the placement of connectors
// read through via, and returns that placement and when it was seen.
func (e *env) waitPlacement(ctx context.Context, via *harness.Worker, timeout time.Duration, what string, cond func(harness.Placement) bool, connectors ...string) (harness.Placement, time.Time) {
	e.t.Helper()
	p, at, err := via.REST.WaitPlacement(ctx, timeout, what, cond, connectors...)
	if err != nil {
		e.t.Fatal(err)
	}
	return p, at
}

// producer writes records "rec-%08d" (key = the same) to a topic until
// stopped, and remembers which ones the broker acknowledged.
type producer struct {
	cl    *kgo.Client
	topic string
	acked atomic.Int64
	mu    sync.Mutex
	ok    map[int]bool
	next  int
	stop  chan struct{}
	done  chan struct{}
	err   error
}

func startProducer(t *testing.T, addr, topic string, perSecond int) *producer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	p := &producer{cl: cl, topic: topic, ok: map[int]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run(perSecond)
	t.Cleanup(func() { p.Stop(); cl.Close() })
	return p
}

func (p *producer) run(perSecond int) {
	defer close(p.done)
	const tick = 20 * time.Millisecond
	batch := max(1, perSecond*int(tick/time.Millisecond)/1000)
	tk := time.NewTicker(tick)
	defer tk.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-p.stop:
			return
		case <-tk.C:
		}
		for range batch {
			id := p.next
			p.next++
			v := fmt.Sprintf("rec-%08d", id)
			wg.Add(1)
			p.cl.Produce(context.Background(), &kgo.Record{Topic: p.topic, Key: []byte(v), Value: []byte(v)}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.err = err
					return
				}
				p.ok[id] = true
				p.acked.Add(1)
			})
		}
	}
}

// Stop stops producing and waits for every outstanding acknowledgement.
func (p *producer) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// Acked returns the acknowledged record ids.
func (p *producer) Acked() map[int]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int]bool, len(p.ok))
	for k := range p.ok {
		out[k] = true
	}
	return out
}

// sinkFile counts the records in a FileSink's output: how often each id
// appears, and lines that are not whole records.
func sinkFile(path string) (counts map[int]int, lines, torn int, err error) {
	counts = map[int]int{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return counts, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		n, ok := strings.CutPrefix(l, "rec-")
		id, err := strconv.Atoi(n)
		if !ok || len(n) != 8 || err != nil {
			torn++
			continue
		}
		counts[id]++
		lines++
	}
	return counts, lines, torn, sc.Err()
}

func outPath(e *env, name string) string { return filepath.Join(e.dir, name) }
