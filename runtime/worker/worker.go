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

// Package worker assembles one Conveyor worker: the Kafka clients, the
// config/offset/status stores on their compacted topics, the herder that
// runs connectors and tasks, the REST server and, in distributed mode, the
// membership in the cluster's group (runtime/group with the assignor of
// runtime/assignor; see clusterMember). A standalone worker runs everything
// itself. conveyor-worker's main is a thin layer over it.
package worker

import (
	"context"
	"errors"
	"fmt"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/bundled"
	"github.com/conveyor-dev/conveyor/runtime/group"
	"github.com/conveyor-dev/conveyor/runtime/herder"
	"github.com/conveyor-dev/conveyor/runtime/loglevel"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/rest"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// DefaultGCPercent is the worker's GOGC unless the environment sets one
// (conveyor-worker applies it; in-process benchmarks of the runtime do
// too). Its live heap is small (configs, statuses, the records in flight)
// next to what it allocates for every record it moves, so Go's default of
// 100 collects very often; 200 halves the collections for a few MB more
// heap under load (idle memory stays the same).
const DefaultGCPercent = 200

// Options configure a Worker.
type Options struct {
	Config *workerconfig.Config
	// Plugins defaults to the bundled connectors.
	Plugins *plugin.Registry
	// Resolver defaults to configprovider.Distributed (standalone:
	// configprovider.Standard) with the in-cluster secret provider when
	// running in a pod (see defaultResolver).
	Resolver herder.Resolver
	// OnHidden, when set, hears every value the resolver's Scrub hides
	// (resolved values, the worker's own credentials) as it is learnt; the
	// program's output relay scrubs stdout and stderr with them.
	OnHidden func(value, label string)
	Logger   *slog.Logger
	// LogLevels, when set, are the run-time levels behind Logger, changed
	// through /admin/loggers.
	LogLevels *loglevel.Levels
	Version   string
	Commit    string
	// PreviousCrash is the runtime's crash report of this worker's
	// previous process (guard.KeepCrashReports), nil when it did not
	// crash: the connector it names is held FAILED.
	PreviousCrash []byte
	// Standalone makes this worker run every connector and task itself;
	// otherwise (distributed mode) it joins the group named by group.id
	// and runs its share.
	Standalone bool
}

// Worker is one running worker.
type Worker struct {
	cfg      *workerconfig.Config
	log      *slog.Logger
	client   *kgo.Client
	configs  *store.ConfigStore
	offsets  *store.OffsetStore
	statuses *store.StatusStore
	herder   *herder.Herder
	rest     *rest.Server
	listener net.Listener
	// connOffsets holds connectors' own offsets topics (exactly-once).
	connOffsets *connOffsets
	// logLevels are the run-time log levels (nil: fixed).
	logLevels *loglevel.Levels
	// metricsSrv serves metrics.port (nil when metrics are on the REST port).
	metricsSrv *http.Server
	metrics    *metrics.Metrics
	serveErr   chan error

	// Distributed mode only: the group membership on a client of its own.
	groupClient *kgo.Client
	member      *group.Member
	cluster     *clusterMember
	memberDone  chan struct{}
	// countNow asks for the count metrics at once (after an assignment).
	countNow chan struct{}
	// keyNow asks the session key rotation to check at once.
	keyNow chan struct{}
	// joined is closed at the first applied assignment (at once when
	// standalone).
	joined chan struct{}

	// Set during start-up.
	kopts         []kgo.Opt                // the worker's own clients' options
	connOpts      []kgo.Opt                // the connection alone: the base of its tasks' clients
	conn          *clientconfig.Connection // kopts in parts, for connectors' own identities
	admin         *kadm.Client
	kafkaID       string
	auth          *rest.TokenCheck
	resolver      herder.Resolver
	forwardClient *http.Client
	// hmu guards herder and cluster for the config store's listener,
	// which may run before they exist.
	hmu sync.Mutex

	stopOnce sync.Once
	stopped  chan struct{}
}

// Start connects to Kafka, checks (or creates) the internal topics, reads
// them to the end, starts the herder and serves the REST API. In
// distributed mode it then joins the group in the background: Start does
// not wait for the group to form (a slow group never makes the worker
// give up), /readyz says what the membership waits for, and Joined is
// closed at the first assignment.
//
// Each step of the start-up undoes itself when a later one fails (see
// startSteps).
func Start(ctx context.Context, opts Options) (*Worker, error) {
	if opts.Config == nil {
		return nil, errors.New("worker: no configuration")
	}
	opts = opts.withDefaults()
	w := &Worker{cfg: opts.Config, log: opts.Logger, logLevels: opts.LogLevels, metrics: metrics.New(), serveErr: make(chan error, 1),
		stopped: make(chan struct{}), countNow: make(chan struct{}, 1), keyNow: make(chan struct{}, 1), joined: make(chan struct{})}
	var undo undoStack
	for _, step := range w.startSteps(opts) {
		if err := step(ctx, &undo); err != nil {
			undo.run()
			return nil, err
		}
	}
	return w, nil
}

// withDefaults fills the optional parts of Options.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Plugins == nil {
		o.Plugins = bundled.Registry()
	}
	if o.Resolver == nil {
		o.Resolver = defaultResolver(o.Config, o.Standalone)
	}
	if h, ok := o.Resolver.(interface {
		OnHidden(func(value, label string))
	}); ok && o.OnHidden != nil {
		h.OnHidden(o.OnHidden)
	}
	hideOwnCredentials(o.Resolver, o.Config)
	o.Logger = scrubLogger(o.Logger, o.Resolver)
	return o
}

// ForeignClusterError is the refusal to join when the config topic belongs
// to another cluster.
type ForeignClusterError struct {
	Topic    string
	Recorded string
	Own      string
}

func (e *ForeignClusterError) Error() string {
	return fmt.Sprintf("worker: refusing to join: config topic %q belongs to the cluster with %s=%q, but this worker has %s=%q; "+
		"set %s to a topic of this cluster, or set %s=%q to join that cluster",
		e.Topic, workerconfig.KeyGroupID, e.Recorded, workerconfig.KeyGroupID, e.Own, workerconfig.KeyConfigStorageTopic, workerconfig.KeyGroupID, e.Recorded)
}

// countTasks keeps the worker's connector and task count metrics current.
func (w *Worker) countTasks() {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-w.stopped:
			return
		case <-t.C:
		case <-w.countNow:
		}
		w.updateCounts()
		w.reportStalls()
	}
}

// reportStalls marks the tasks of this worker that have work but made no
// progress for task.stall.timeout.ms (kafka_connect_task_stalled, and
// their status, which the REST API and the operator show), and clears the
// mark of those that moved again.
func (w *Worker) reportStalls() {
	now := time.Now()
	stalled := map[store.TaskID]string{}
	for _, st := range w.metrics.Stalled(w.cfg.TaskStallTimeout, now) {
		stalled[store.TaskID{Connector: st.Connector, Task: st.Task}] = fmt.Sprintf(
			"no progress for %s with %d records of work (in flight or lag); %s=%d",
			st.Since.Round(time.Second), st.Work, workerconfig.KeyTaskStallTimeout, w.cfg.TaskStallTimeout.Milliseconds())
	}
	for _, id := range w.herder.Assignment().Tasks {
		w.herder.SetTaskStalled(id, stalled[id])
	}
}

// updateCounts sets the connector and task counts of what this worker was
// assigned (everything on a standalone worker), tasks by state.
func (w *Worker) updateCounts() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a := w.herder.Assignment()
	mine := map[string]map[int]bool{}
	for _, t := range a.Tasks {
		if mine[t.Connector] == nil {
			mine[t.Connector] = map[int]bool{}
		}
		mine[t.Connector][t.Task] = true
	}
	counts := map[string]int{}
	names, _ := w.herder.ListConnectors(ctx)
	for _, n := range names {
		st, err := w.herder.ConnectorStatus(ctx, n)
		if err != nil {
			continue
		}
		per := map[string]int{}
		for _, ts := range st.Tasks {
			if mine[n][ts.ID] {
				counts[ts.State]++
				per[ts.State]++
			}
		}
		w.metrics.SetConnectorTaskCounts(n, per)
	}
	w.metrics.SetConnectorCount(len(a.Connectors))
	w.metrics.SetTaskCounts(counts)
}

// Joined is closed once this worker applied its first assignment (at once
// for a standalone worker).
func (w *Worker) Joined() <-chan struct{} { return w.joined }

// WaitJoined waits until Joined is closed, the membership failed for good,
// or ctx ends.
func (w *Worker) WaitJoined(ctx context.Context) error {
	select {
	case <-w.joined:
		return nil
	case <-w.memberDone:
		return fmt.Errorf("worker: the group membership ended before the first assignment")
	case <-ctx.Done():
		msg := ""
		if w.member != nil {
			msg = ": " + w.member.Waiting()
		}
		return fmt.Errorf("worker: waiting for the first assignment (%s=%q)%s: %w", workerconfig.KeyGroupID, w.cfg.GroupID, msg, ctx.Err())
	}
}

// Herder returns the worker's herder.
func (w *Worker) Herder() *herder.Herder { return w.herder }

// Logger is the worker's logger: every message passes through the
// resolver's Scrub (the program makes it slog's default, so the client
// libraries that log through slog are scrubbed too).
func (w *Worker) Logger() *slog.Logger { return w.log }

// Scrub hides every resolved value and the worker's own credentials in
// msg (for output no connector owns, such as a panic report).
func (w *Worker) Scrub(msg string) string {
	if s := scrubOf(w.resolver); s != nil {
		return s(msg)
	}
	return msg
}

// RESTAddr returns the address the REST server listens on, with a
// loopback host when it listens on every interface.
func (w *Worker) RESTAddr() string {
	a := w.listener.Addr().(*net.TCPAddr)
	if a.IP == nil || a.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	return a.String()
}

// ServeErr reports a REST server failure (nil after Shutdown).
func (w *Worker) ServeErr() <-chan error { return w.serveErr }

// Shutdown stops the worker gracefully within ctx: every task stops
// polling, flushes and commits; then the REST server and the Kafka clients
// close.
func (w *Worker) Shutdown(ctx context.Context) error {
	var errs []error
	w.stopOnce.Do(func() {
		close(w.stopped)
		if err := w.herder.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		if w.cluster != nil {
			// Tasks are flushed and committed: announce the departure
			// and leave, so they move at once.
			if err := w.cluster.leave(ctx, min(w.cfg.RebalanceTimeout, w.cfg.SessionTimeout)); err != nil {
				errs = append(errs, err)
			}
			w.groupClient.Close()
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		w.stopMetrics(sctx)
		if err := w.rest.Shutdown(sctx); err != nil {
			// Requests still in flight (e.g. a write waiting out a
			// rebalance) are cut: the tasks are already stopped and
			// committed, so this is no reason to fail the shutdown.
			w.log.Warn("REST requests still in flight after 2s; closing their connections", "error", err)
			_ = w.rest.Close()
		}
		cancel()
		w.closeStores()
		w.client.Close()
	})
	return errors.Join(errs...)
}

// crash acts out a crashed worker for tests: it stops heartbeating
// without leaving the group (the coordinator notices only when the session
// expires) and closes everything without a graceful handoff.
func (w *Worker) crash() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		if w.member != nil {
			w.member.Abandon()
			w.groupClient.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.herder.Close(ctx)
		_ = w.rest.Shutdown(ctx)
		w.stopMetrics(ctx)
		w.closeStores()
		w.client.Close()
	})
}

func (w *Worker) closeStores() {
	if w.configs != nil {
		w.configs.Close()
	}
	if w.offsets != nil {
		w.offsets.Close()
	}
	if w.connOffsets != nil {
		w.connOffsets.close()
	}
	if w.statuses != nil {
		w.statuses.Close()
	}
}
