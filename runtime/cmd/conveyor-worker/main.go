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

// Command conveyor-worker is the Conveyor worker: a Go-native, Kafka
// Connect-compatible runtime. It links no Kubernetes package.
//
//	conveyor-worker --config worker.properties
//	conveyor-worker standalone [--config worker.properties] [--kafka-port 9092] connector.properties...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/loglevel"
	"github.com/conveyor-dev/conveyor/runtime/properties"
	"github.com/conveyor-dev/conveyor/runtime/worker"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usageHead = `conveyor-worker runs Conveyor connectors and tasks (a Kafka Connect-compatible worker).

Usage:
  conveyor-worker --config FILE
      Distributed mode: the worker joins the cluster named by group.id on the
      Kafka cluster in bootstrap.servers, keeps its state in the internal
      topics and serves the Kafka Connect REST API (rest.port). Workers with
      the same group.id and internal topics share connectors and tasks; each
      must advertise a REST URL the others reach (rest.advertised.host.name,
      default $POD_IP, and rest.advertised.port), because followers forward
      writes to the leader. A crashed worker's tasks move after
      session.timeout.ms plus scheduled.rebalance.max.delay.ms; a worker
      stopped with SIGTERM hands its tasks over at once.
  conveyor-worker standalone [--config FILE] [--kafka-port N] [--kafka-data-dir DIR] [CONNECTOR.properties ...]
      A worker with an in-process Kafka broker (kfake) that needs no setup:
      internal topics are created, and each CONNECTOR.properties file (with
      name= and connector.class=) is created or updated at start. The broker
      address is printed so kcat and other clients can reach it. Defaults
      differ for a quick demo: offset.flush.interval.ms=1000, replication
      factors 1, group.id=conveyor-standalone.

Flags:
  --config FILE         worker configuration, a Java properties file (keys below)
  --kafka-port N        standalone: the in-process broker's port (default 9092; 0 = any free port)
  --kafka-data-dir DIR  standalone: keep the broker's data in DIR across restarts (default: in memory)
  --cpuprofile FILE     write a Go CPU profile of the whole run to FILE (for go tool pprof)
  --heapprofile FILE    write a Go heap profile (the live heap after a collection) to FILE
                        each time the worker gets SIGUSR1 (for go tool pprof)
  -h, --help            this help

Signals: SIGTERM or SIGINT stops the worker gracefully: tasks stop polling,
flush and commit, the worker hands them to the rest of its cluster and leaves
the group, then it exits (bounded by
task.shutdown.graceful.timeout.ms plus a few seconds).

Worker configuration keys:
`

func usage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	fmt.Fprint(w, workerconfig.HelpText())
}

func main() {
	if os.Getenv(relayEnv) == relayOn {
		os.Exit(runRelay(os.Args[1:], os.Stderr, terminationLog))
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(worker.DefaultGCPercent)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	standalone := false
	if len(args) > 0 && args[0] == "standalone" {
		standalone = true
		args = args[1:]
	}
	fs := flag.NewFlagSet("conveyor-worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "")
	kafkaPort := fs.Int("kafka-port", 9092, "")
	kafkaDir := fs.String("kafka-data-dir", "", "")
	cpuProfile := fs.String("cpuprofile", "", "")
	heapProfile := fs.String("heapprofile", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "conveyor-worker: %v (see --help)\n", err)
		return 2
	}
	if len(args) > 0 && args[0] == "help" {
		usage(stdout)
		return 0
	}
	// INFO at start; PUT /admin/loggers/{logger} changes it at run time.
	levels := loglevel.New(slog.LevelInfo)
	log := slog.New(levels.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: loglevel.Lowest})))
	if soft, from := worker.ApplyMemoryLimit(); soft > 0 {
		log.Info("Go memory limit set from the container's memory limit", "gomemlimit_bytes", soft, "fraction", worker.MemoryLimitFraction, "from", from)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "conveyor-worker: --cpuprofile: %v\n", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if *heapProfile != "" {
		defer heapProfileOnSignal(*heapProfile, stderr)()
	}
	if !standalone {
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "conveyor-worker: unexpected arguments %v: connector files are for standalone mode (see --help)\n", fs.Args())
			return 2
		}
		if *configPath == "" {
			fmt.Fprintln(stderr, "conveyor-worker: --config FILE is required (or use `conveyor-worker standalone`; see --help)")
			return 2
		}
		cfg, err := workerconfig.Load(*configPath)
		if err != nil {
			fmt.Fprintf(stderr, "conveyor-worker: %v\n", err)
			return 1
		}
		return serve(cfg, false, nil, log, levels, stdout, stderr)
	}

	// Standalone: an in-process broker and internal topic creation.
	m := map[string]string{}
	if *configPath != "" {
		var err error
		if m, err = properties.Load(*configPath); err != nil {
			fmt.Fprintf(stderr, "conveyor-worker: %v\n", err)
			return 1
		}
	}
	connectors := make([]map[string]string, 0, fs.NArg())
	for _, p := range fs.Args() {
		c, err := properties.Load(p)
		if err != nil {
			fmt.Fprintf(stderr, "conveyor-worker: connector file: %v\n", err)
			return 1
		}
		if strings.TrimSpace(c["name"]) == "" {
			fmt.Fprintf(stderr, "conveyor-worker: connector file %s: set name=<connector name>\n", p)
			return 1
		}
		connectors = append(connectors, c)
	}
	kopts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*kafkaPort), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1)}
	if *kafkaDir != "" {
		kopts = append(kopts, kfake.DataDir(*kafkaDir))
	}
	broker, err := kfake.NewCluster(kopts...)
	if err != nil {
		fmt.Fprintf(stderr, "conveyor-worker: starting the in-process Kafka broker on port %d (--kafka-port): %v\n", *kafkaPort, err)
		return 1
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]
	fmt.Fprintf(stdout, "conveyor-worker: Kafka (in-process kfake) listening on %s (for example: kcat -b %s -L)\n", addr, addr)
	m[workerconfig.KeyBootstrapServers] = addr
	if m[workerconfig.KeyGroupID] == "" {
		m[workerconfig.KeyGroupID] = "conveyor-standalone"
	}
	m[workerconfig.KeyInternalTopicsCreate] = "true"
	if m[workerconfig.KeyOffsetFlushInterval] == "" {
		m[workerconfig.KeyOffsetFlushInterval] = "1000" // a demo shows data quickly
	}
	if m[workerconfig.KeyOffsetStoragePartitions] == "" {
		m[workerconfig.KeyOffsetStoragePartitions] = "5"
	}
	if m[workerconfig.KeyConfigStorageReplicationFactor] == "" {
		for _, k := range []string{workerconfig.KeyConfigStorageReplicationFactor, workerconfig.KeyOffsetStorageReplicationFactor, workerconfig.KeyStatusStorageReplicationFactor} {
			m[k] = "1"
		}
	}
	cfg, err := workerconfig.Parse(m)
	if err == nil {
		cfg.ApplyEnv(os.Getenv)
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "conveyor-worker: %v\n", err)
		return 1
	}
	return serve(cfg, true, connectors, log, levels, stdout, stderr)
}

func serve(cfg *workerconfig.Config, standalone bool, connectors []map[string]string, log *slog.Logger, levels *loglevel.Levels, stdout, stderr io.Writer) int {
	for _, k := range cfg.UnknownKeys() {
		log.Warn("unknown worker configuration key (typo?)", "key", k)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// The limit bounds reaching Kafka and reading the internal topics; the
	// group join runs on in the background for as long as it takes.
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	var crash []byte
	if f := guard.CrashFile(); f != "" {
		var err error
		if crash, err = guard.KeepCrashReports(f); err != nil {
			log.Warn("crash reports are not kept", "error", err)
		}
	}
	opts := worker.Options{Config: cfg, Logger: log, LogLevels: levels, Version: version, Standalone: standalone, PreviousCrash: crash}
	if os.Getenv(relayEnv) == relayChild {
		opts.OnHidden = announceHidden(stderr)
	}
	w, err := worker.Start(startCtx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "conveyor-worker: %v\n", err)
		return 1
	}
	// Client libraries log through slog's default (and log's): the worker's
	// scrubbing logger, so they cannot print a resolved value either.
	slog.SetDefault(w.Logger())
	defer reportPanic(w.Scrub, stderr)
	fmt.Fprintf(stdout, "conveyor-worker: REST API listening on http://%s (worker id %s)\n", w.RESTAddr(), cfg.EffectiveWorkerID())
	code := 0
	for _, c := range connectors {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, created, err := w.Herder().PutConnectorConfig(cctx, c["name"], c)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "conveyor-worker: connector %s: %v\n", c["name"], err)
			code = 1
			break
		}
		verb := "updated"
		if created {
			verb = "created"
		}
		fmt.Fprintf(stdout, "conveyor-worker: connector %s %s\n", c["name"], verb)
	}
	joined := w.Joined()
	if standalone {
		joined = nil
	}
wait:
	for code == 0 {
		select {
		case <-joined:
			// Distributed mode: the REST API serves from the start, and
			// /readyz turns 200 with the first assignment.
			fmt.Fprintf(stdout, "conveyor-worker: joined group %q (first assignment applied)\n", cfg.GroupID)
			joined = nil
		case <-ctx.Done():
			log.Info("signal received: stopping gracefully")
			break wait
		case err := <-w.ServeErr():
			if err != nil {
				fmt.Fprintf(stderr, "conveyor-worker: %v\n", err)
				code = 1
			}
			break wait
		}
	}
	stop() // a second signal now kills the process
	bound := cfg.TaskShutdownGracefulTimeout + 5*time.Second
	sctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := w.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "conveyor-worker: shutdown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	log.Info("stopped")
	return code
}
