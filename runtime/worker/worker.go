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
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/assignor"
	"github.com/conveyor-dev/conveyor/runtime/bundled"
	"github.com/conveyor-dev/conveyor/runtime/group"
	"github.com/conveyor-dev/conveyor/runtime/herder"
	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/metrics"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/rest"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/task"
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
	Logger   *slog.Logger
	Version  string
	Commit   string
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

	stopOnce sync.Once
	stopped  chan struct{}
}

// Start connects to Kafka, checks (or creates) the internal topics, reads
// them to the end, starts the herder and serves the REST API.
func Start(ctx context.Context, opts Options) (*Worker, error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, errors.New("worker: no configuration")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Plugins == nil {
		opts.Plugins = bundled.Registry()
	}
	if opts.Resolver == nil {
		opts.Resolver = defaultResolver(cfg, opts.Standalone)
	}
	log = scrubLogger(log, opts.Resolver)
	kopts, err := KafkaOpts(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("worker: Kafka client options: %w", err)
	}
	client, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("worker: creating Kafka client: %w", err)
	}
	w := &Worker{cfg: cfg, log: log, client: client, metrics: metrics.New(), serveErr: make(chan error, 1), stopped: make(chan struct{}), countNow: make(chan struct{}, 1)}
	ok := false
	defer func() {
		if !ok {
			w.closeStores()
			client.Close()
			if w.groupClient != nil {
				w.groupClient.Close()
			}
		}
	}()
	adm := kadm.NewClient(client)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("worker: reaching Kafka at %s: %w", strings.Join(cfg.BootstrapServers, ","), err)
	}

	open := func(ctx context.Context, t kafkalog.Topic, apply func(kafkalog.Record)) (*kafkalog.Log, error) {
		t.Create = cfg.InternalTopicsCreate
		t.CreateFlag = workerconfig.KeyInternalTopicsCreate + "=true"
		return kafkalog.Open(ctx, kafkalog.Config{Topic: t, ClientOpts: kopts, Apply: apply})
	}
	var h *herder.Herder
	var cm *clusterMember
	var hmu sync.Mutex
	w.configs, err = store.OpenConfigStore(ctx, open, kafkalog.Topic{Name: cfg.ConfigStorageTopic, Partitions: 1, ReplicationFactor: cfg.ConfigStorageReplicationFactor},
		func(ev store.ConfigEvent) {
			hmu.Lock()
			hh, c := h, cm
			hmu.Unlock()
			if hh != nil {
				hh.OnConfigEvent(ev)
			}
			if c != nil {
				c.configChanged(ev)
			}
		})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	// The config topic belongs to one cluster: the first worker records its
	// group.id; a worker of another group refuses to use the topic.
	owner, err := w.configs.PutClusterID(ctx, cfg.GroupID)
	if err != nil {
		return nil, fmt.Errorf("worker: recording the cluster id in topic %q: %w", cfg.ConfigStorageTopic, err)
	}
	if owner != cfg.GroupID {
		return nil, &ForeignClusterError{Topic: cfg.ConfigStorageTopic, Recorded: owner, Own: cfg.GroupID}
	}
	w.offsets, err = store.OpenOffsetStore(ctx, open, kafkalog.Topic{Name: cfg.OffsetStorageTopic, CreatePartitions: cfg.OffsetStoragePartitions, ReplicationFactor: cfg.OffsetStorageReplicationFactor})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.statuses, err = store.OpenStatusStore(ctx, open, kafkalog.Topic{Name: cfg.StatusStorageTopic, CreatePartitions: cfg.StatusStoragePartitions, ReplicationFactor: cfg.StatusStorageReplicationFactor})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}

	limitEvery := cfg.TaskLimitsCheckInterval

	// Listen before the herder starts so the advertised URL is known.
	ln, err := net.Listen("tcp", cfg.RestListenAddress())
	if err != nil {
		return nil, fmt.Errorf("worker: REST listener on %s (%s, %s): %w", cfg.RestListenAddress(), workerconfig.KeyRestHostName, workerconfig.KeyRestPort, err)
	}
	w.listener = ln
	if cfg.RestPort == 0 {
		cfg.RestPort = ln.Addr().(*net.TCPAddr).Port
	}

	auth, err := restAuth(cfg, log)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	if _, err := task.ProducerSettings(cfg.Prefixed("producer.")); err != nil {
		ln.Close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	forwardClient := &http.Client{Timeout: 30 * time.Second}
	hh, err := herder.New(herder.Options{
		WorkerID: cfg.EffectiveWorkerID(), URL: cfg.AdvertisedURL(),
		Version: opts.Version, Commit: opts.Commit, KafkaClusterID: meta.Cluster,
		Plugins: opts.Plugins, Configs: w.configs, Offsets: w.offsets, Statuses: w.statuses,
		Admin: adm, Resolver: opts.Resolver,
		Tasks: &taskRuntime{kafka: kopts, workerConv: cfg.ConverterConfig(), offsets: w.offsets, metrics: w.metrics, log: log,
			flushInterval: cfg.OffsetFlushInterval, flushTimeout: cfg.OffsetFlushTimeout, consumer: cfg.Prefixed("consumer."), producer: cfg.Prefixed("producer."),
			topicUsed: scrubTopicUsed(w.statuses.PutTopic, opts.Resolver)},
		AssignAll: opts.Standalone,
		ForwardTaskConfigs: func(ctx context.Context, connector string, cfgs []map[string]string) error {
			hmu.Lock()
			hh := h
			hmu.Unlock()
			return rest.SendTaskConfigs(ctx, forwardClient, hh.LeaderURL(), auth.Token(), connector, cfgs)
		},
		LimitCheckInterval: limitEvery,
		TaskStopTimeout:    cfg.TaskShutdownGracefulTimeout,
		Logger:             log,
	})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	var c *clusterMember
	if !opts.Standalone {
		c = newClusterMember(hh, w.configs, w.metrics, log, cfg.EffectiveWorkerID(), cfg.AdvertisedURL(), cfg.ScheduledRebalanceMaxDelay, cfg.RebalanceTimeout)
		c.maxTasks = cfg.MaxTasksPerWorker
		if w.groupClient, err = kgo.NewClient(kopts...); err != nil {
			ln.Close()
			return nil, fmt.Errorf("worker: creating the group's Kafka client: %w", err)
		}
		w.member, err = group.New(group.Config{Client: w.groupClient, Group: cfg.GroupID, Protocol: assignor.ProtocolName,
			SessionTimeout: cfg.SessionTimeout, RebalanceTimeout: cfg.RebalanceTimeout, HeartbeatInterval: cfg.HeartbeatInterval,
			Handler: c, Logger: log})
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("worker: %w", err)
		}
		c.member = w.member
		c.assignedHook = func() {
			select {
			case w.countNow <- struct{}{}:
			default:
			}
		}
		w.cluster = c
	}
	hmu.Lock()
	h, cm = hh, c
	hmu.Unlock()
	w.herder = hh
	restCfg := rest.Config{Addr: ln.Addr().String(), Auth: auth, Scrub: scrubOf(opts.Resolver), Logger: log, ForwardClient: forwardClient}
	if cfg.MetricsPort == 0 {
		restCfg.Gatherer = w.metrics.Registry()
	}
	w.rest, err = rest.New(hh, restCfg)
	if err == nil {
		w.metricsSrv, err = w.startMetrics(restCfg.Scrub)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	hh.Run()
	if w.member != nil {
		// Join the group; Start returns once this worker has its first
		// assignment, so the REST API knows the leader from the start.
		w.memberDone = make(chan struct{})
		var memberErr error
		go func() {
			defer close(w.memberDone)
			if memberErr = w.member.Run(context.Background()); memberErr != nil {
				log.Error("group membership failed", "err", memberErr)
				select {
				case w.serveErr <- fmt.Errorf("worker: %w", memberErr):
				default:
				}
			}
		}()
		select {
		case <-c.assigned:
		case <-w.memberDone:
			hh.Close(context.Background())
			ln.Close()
			return nil, fmt.Errorf("worker: joining group %q: %w", cfg.GroupID, memberErr)
		case <-ctx.Done():
			w.member.Abandon()
			hh.Close(context.Background())
			ln.Close()
			return nil, fmt.Errorf("worker: joining group %q (%s): %w", cfg.GroupID, workerconfig.KeyGroupID, ctx.Err())
		}
	}
	go func() {
		err := w.rest.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		w.serveErr <- err
	}()
	go w.countTasks()
	ok = true
	return w, nil
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

// Herder returns the worker's herder.
func (w *Worker) Herder() *herder.Herder { return w.herder }

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
	if w.statuses != nil {
		w.statuses.Close()
	}
}
