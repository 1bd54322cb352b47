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

package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/assignor"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/group"
	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/herder"
	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/rest"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// undoStack holds the clean-ups of the start-up steps done so far; run
// undoes them, the last first.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u *undoStack) run() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

// startStep is one step of Start: it does its part and pushes what undoes
// it.
type startStep func(ctx context.Context, undo *undoStack) error

// startSteps are the steps of Start, in order.
func (w *Worker) startSteps(opts Options) []startStep {
	steps := []startStep{w.connectKafka, w.openStores, w.listenREST,
		func(ctx context.Context, undo *undoStack) error { return w.buildHerder(opts) }}
	if !opts.Standalone {
		steps = append(steps, w.buildMember)
	}
	return append(steps, w.serve)
}

// connectKafka creates the worker's Kafka client and reaches the cluster.
func (w *Worker) connectKafka(ctx context.Context, undo *undoStack) error {
	conn, err := KafkaConnection(w.cfg, w.log)
	if err != nil {
		return fmt.Errorf("worker: Kafka client options: %w", err)
	}
	kopts, err := conn.For(clientconfig.Settings{})
	if err != nil {
		return fmt.Errorf("worker: Kafka client options: %w", err)
	}
	client, err := kgo.NewClient(kopts...)
	if err != nil {
		return fmt.Errorf("worker: creating Kafka client: %w", err)
	}
	undo.push(client.Close)
	w.conn, w.kopts, w.client, w.admin = conn, kopts, client, kadm.NewClient(client)
	meta, err := w.admin.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("worker: reaching Kafka at %s: %w", strings.Join(w.cfg.BootstrapServers, ","), err)
	}
	w.kafkaID = meta.Cluster
	return nil
}

// openStores opens the config, offset and status stores on their topics
// and reads them to the end. The config topic belongs to one cluster: the
// first worker records its group.id; a worker of another group refuses it.
func (w *Worker) openStores(ctx context.Context, undo *undoStack) error {
	cfg := w.cfg
	undo.push(w.closeStores)
	open := func(ctx context.Context, t kafkalog.Topic, apply func(kafkalog.Record)) (*kafkalog.Log, error) {
		t.Create = cfg.InternalTopicsCreate
		t.CreateFlag = workerconfig.KeyInternalTopicsCreate + "=true"
		return kafkalog.Open(ctx, kafkalog.Config{Topic: t, ClientOpts: w.kopts, Apply: apply})
	}
	var err error
	w.configs, err = store.OpenConfigStore(ctx, open, kafkalog.Topic{Name: cfg.ConfigStorageTopic, Partitions: 1, ReplicationFactor: cfg.ConfigStorageReplicationFactor},
		w.onConfigEvent)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	owner, err := w.configs.PutClusterID(ctx, cfg.GroupID)
	if err != nil {
		return fmt.Errorf("worker: recording the cluster id in topic %q: %w", cfg.ConfigStorageTopic, err)
	}
	if owner != cfg.GroupID {
		return &ForeignClusterError{Topic: cfg.ConfigStorageTopic, Recorded: owner, Own: cfg.GroupID}
	}
	// With exactly-once sources (or while preparing for them) offsets are
	// written in transactions: only committed ones are read.
	w.offsets, err = store.OpenOffsetStore(ctx, open, kafkalog.Topic{Name: cfg.OffsetStorageTopic, CreatePartitions: cfg.OffsetStoragePartitions,
		ReplicationFactor: cfg.OffsetStorageReplicationFactor, ReadCommitted: cfg.ExactlyOnceReadCommitted()})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.connOffsets = &connOffsets{open: open}
	w.statuses, err = store.OpenStatusStore(ctx, open, kafkalog.Topic{Name: cfg.StatusStorageTopic, CreatePartitions: cfg.StatusStoragePartitions, ReplicationFactor: cfg.StatusStorageReplicationFactor})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// onConfigEvent passes config records to the herder and the membership,
// once they exist, and applies cluster-wide log levels (loglevels.go).
func (w *Worker) onConfigEvent(ev store.ConfigEvent) {
	if ev.Kind == store.LoggerLevelSet {
		w.applyClusterLevel(ev)
		return
	}
	w.hmu.Lock()
	h, c := w.herder, w.cluster
	w.hmu.Unlock()
	if h != nil {
		h.OnConfigEvent(ev)
	}
	if c != nil {
		c.configChanged(ev)
	}
}

// listenREST opens the REST listener before the herder starts, so the
// advertised URL is known.
func (w *Worker) listenREST(ctx context.Context, undo *undoStack) error {
	cfg := w.cfg
	ln, err := net.Listen("tcp", cfg.RestListenAddress())
	if err != nil {
		return fmt.Errorf("worker: REST listener on %s (%s, %s): %w", cfg.RestListenAddress(), workerconfig.KeyRestHostName, workerconfig.KeyRestPort, err)
	}
	undo.push(func() { ln.Close() })
	w.listener = ln
	if cfg.RestPort == 0 {
		cfg.RestPort = ln.Addr().(*net.TCPAddr).Port
	}
	return nil
}

// buildHerder checks the REST token and producer settings and creates the
// herder (it runs from serve on).
func (w *Worker) buildHerder(opts Options) error {
	cfg := w.cfg
	auth, err := restAuth(cfg, w.log)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	// The table of client properties checks the worker's producer.*,
	// consumer.* and admin.* keys (Config.Validate); the policy decides
	// which of them connectors may override.
	policy, err := cfg.OverridePolicy()
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.auth, w.resolver = auth, opts.Resolver
	w.forwardClient = &http.Client{Timeout: 30 * time.Second}
	grants, reserved := connectorGrants(cfg, opts.Standalone), reservedTopics(cfg)
	hh, err := herder.New(herder.Options{
		WorkerID: cfg.EffectiveWorkerID(), URL: cfg.AdvertisedURL(),
		Version: opts.Version, Commit: opts.Commit, KafkaClusterID: w.kafkaID,
		Plugins: opts.Plugins, Configs: w.configs, Offsets: w.offsets, Statuses: w.statuses,
		Admin: w.admin, Resolver: opts.Resolver,
		ConnectorAdmin: connectorAdmin(w.admin, w.conn, cfg.Prefixed("admin."), policy),
		Tasks: &taskRuntime{kafka: w.kopts, workerConv: cfg.ConverterConfig(), offsets: w.offsets, metrics: w.metrics, log: w.log,
			flushInterval: cfg.OffsetFlushInterval, flushTimeout: cfg.OffsetFlushTimeout, consumer: cfg.Prefixed("consumer."), producer: cfg.Prefixed("producer."),
			admin: cfg.Prefixed("admin."), conn: w.conn, policy: policy, topicCreation: cfg.TopicCreationEnable,
			topicUsed: scrubTopicUsed(w.statuses.PutTopic, opts.Resolver), scrubFor: scrubForOf(opts.Resolver), instanceID: cfg.GroupInstanceID,
			exactlyOnce: cfg.ExactlyOnceEnabled(), groupID: cfg.GroupID, openOffsets: w.connOffsets.get,
			grants: grants, reserved: reserved},
		Grants: grants, Reserved: reserved, ClientOverrides: policy, ClientSecurity: w.securityWithoutPassword(),
		ExactlyOnce: strings.ToLower(cfg.ExactlyOnceSourceSupport),
		FenceTasks: func(ctx context.Context, connector string, tasks int) error {
			return fenceTasks(ctx, w.client, cfg.GroupID, connector, tasks)
		},
		AssignAll: opts.Standalone,
		ForwardTaskConfigs: func(ctx context.Context, connector string, cfgs []map[string]string) error {
			return rest.SendTaskConfigs(ctx, w.forwardClient, w.sessionKeys(), w.herder.LeaderURL(), w.auth.Token(), connector, cfgs)
		},
		LimitCheckInterval: cfg.TaskLimitsCheckInterval,
		TaskStopTimeout:    cfg.TaskShutdownGracefulTimeout,
		Logger:             w.log,
	})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.hmu.Lock()
	w.herder = hh
	w.hmu.Unlock()
	if c, crashed := guard.ParseCrash(opts.PreviousCrash); crashed {
		// Before joining: the crash record holds the connector before
		// this worker is given it again.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := hh.RecordCrash(ctx, c); err != nil {
			return fmt.Errorf("worker: recording the previous process's crash: %w", err)
		}
	}
	return nil
}

// buildMember prepares the group membership (distributed mode) on a Kafka
// client of its own; serve starts it.
func (w *Worker) buildMember(ctx context.Context, undo *undoStack) error {
	cfg := w.cfg
	c := newClusterMember(w.herder, w.configs, w.metrics, w.log, cfg.EffectiveWorkerID(), cfg.AdvertisedURL(), cfg.ScheduledRebalanceMaxDelay, cfg.RebalanceTimeout)
	c.maxTasks = cfg.MaxTasksPerWorker
	c.revision = cfg.Revision
	gc, err := kgo.NewClient(w.kopts...)
	if err != nil {
		return fmt.Errorf("worker: creating the group's Kafka client: %w", err)
	}
	undo.push(gc.Close)
	w.groupClient = gc
	w.member, err = group.New(group.Config{Client: gc, Group: cfg.GroupID, Protocol: assignor.ProtocolName, InstanceID: cfg.GroupInstanceID,
		SessionTimeout: cfg.SessionTimeout, RebalanceTimeout: cfg.RebalanceTimeout, HeartbeatInterval: cfg.HeartbeatInterval,
		Handler: c, Logger: w.log})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	c.member = w.member
	c.assignedHook = func() {
		select {
		case w.countNow <- struct{}{}:
		default:
		}
		select {
		case w.keyNow <- struct{}{}:
		default:
		}
	}
	w.herder.SetJoinStatus(w.member.Waiting)
	w.hmu.Lock()
	w.cluster = c
	w.hmu.Unlock()
	return nil
}

// serve starts the herder, the REST server and (distributed mode) the group
// membership, which from now on retries for as long as the worker runs.
func (w *Worker) serve(ctx context.Context, undo *undoStack) error {
	var err error
	restCfg := rest.Config{Addr: w.listener.Addr().String(), Auth: w.auth, Scrub: scrubOf(w.resolver), ScrubFor: scrubForOf(w.resolver), Logger: w.log, ForwardClient: w.forwardClient,
		MaxConcurrent: w.cfg.RestThreadsMax, Loggers: w.logLevels, ClusterLoggers: w.putClusterLevel}
	if w.cfg.MetricsPort == 0 {
		restCfg.Gatherer = w.metrics.Registry()
	}
	if w.member != nil {
		restCfg.SessionKeys = w.sessionKeys()
	}
	if w.rest, err = rest.New(w.herder, restCfg); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if w.metricsSrv, err = w.startMetrics(restCfg.Scrub); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.herder.Run()
	go func() {
		err := w.rest.Serve(w.listener)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		w.serveErr <- err
	}()
	go w.countTasks()
	if w.member != nil {
		go w.rotateSessionKeys()
	}
	if w.member == nil {
		close(w.joined)
		return nil
	}
	w.memberDone = make(chan struct{})
	go func() {
		defer close(w.memberDone)
		if err := w.member.Run(context.Background()); err != nil {
			w.log.Error("group membership failed", "err", err)
			select {
			case w.serveErr <- fmt.Errorf("worker: %w", err):
			default:
			}
		}
	}()
	go func() {
		select {
		case <-w.cluster.assigned:
			close(w.joined)
		case <-w.memberDone:
		}
	}()
	return nil
}

// securityWithoutPassword is the worker's Kafka security for validating
// connectors' own logins: its protocol, mechanism and user, no secrets.
func (w *Worker) securityWithoutPassword() *clientconfig.Security {
	if w.conn == nil {
		return nil
	}
	s := w.conn.Security
	s.Pass, s.TLS = "", nil
	return &s
}
