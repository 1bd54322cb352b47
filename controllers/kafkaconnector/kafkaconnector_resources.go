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

package kafkaconnector

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/condition"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// connectorLoop records what one reconcile pass observed and did.
// computeStatus turns it into the status and emitEvents into events; a
// field left at its zero value means "not observed, not done this pass", so
// the status keeps what it had.
type connectorLoop struct {
	// Observed before acting.
	cluster *v1alpha1.ConnectCluster
	refs    []clusterkit.SecretRef
	desired map[string]string
	workers *workerclient.Client
	// missing: the workers have no connector of this name.
	missing bool
	// runtime is the connector's status in the runtime (after a creation,
	// the one read back; empty when the runtime has none yet).
	runtime *connectapi.ConnectorStateInfo
	// view is the connector's entry in a whole-cluster read (clusterViews),
	// when the pass may use one; nil: ask the workers.
	view *connectapi.ConnectorExpansion

	// What the pass did.
	created bool
	// configKeys are the keys of the config diff written for a spec
	// change; nil when the stored config was left alone or reverted.
	configKeys []string
	// configHash is status.configHash after this pass; nil leaves it.
	configHash *string
	// drift is what the config step saw and decided (nil: not run).
	drift *driftOutcome
	// offsets is the spec.offsets request handled this pass (nil: none).
	offsets *v1alpha1.OffsetsStatus
	// action is the state call sent (pause, resume, stop).
	action StateAction
	// restarts are the restarts sent, in order.
	restarts []sentRestart
	// handled holds the restart annotation values to record; nil leaves them.
	handled *HandledRestarts
	// restartCount is status.restarts after this pass; nil leaves it.
	restartCount *int32

	// Observed after acting.
	limits      *observedLimits
	topics      *[]string
	lagRead     bool
	lag         *int64
	secretsHash *string

	// problem stops the pass short of a connector in its target state
	// (Ready=False with its reason).
	problem *condition.Problem
	// done: the pass reached its end, so runtime is the connector's
	// current status and the requeue is requeue.
	done    bool
	requeue time.Duration
	// again: the pass found the runtime changing under it (a connector
	// created concurrently) and looks again at once, changing nothing.
	again bool
}

// stop says the pass must not go on.
func (l *connectorLoop) stop() bool { return l.problem != nil || l.again }

// acted says the pass may have changed something in the runtime: it sent
// the workers a request other than a read (a create, a config write or
// revert, a restart, a state change, an offsets change, a validation).
func (l *connectorLoop) acted() bool {
	return l.workers != nil && l.workers.Writes() > 0
}

// storedConfig is the config the workers hold: from the cluster view when
// the pass has one, else read.
func (l *connectorLoop) storedConfig(ctx context.Context, name string) (map[string]string, error) {
	if l.view != nil && l.view.Info != nil {
		return l.view.Info.Config, nil
	}
	return l.workers.ConnectorConfig(ctx, name)
}

func (l *connectorLoop) fail(reason, format string, args ...any) {
	l.problem = condition.Problemf(reason, format, args...)
}

// wakeWithin shortens the requeue to d.
func (l *connectorLoop) wakeWithin(d time.Duration) {
	if d > 0 && d < l.requeue {
		l.requeue = d
	}
}

// restartKind says why a restart was sent.
type restartKind string

const (
	restartRequested restartKind = "Restarted"      // a restart annotation
	restartAuto      restartKind = "AutoRestarted"  // spec.autoRestart
	restartSecrets   restartKind = "SecretsRotated" // a referenced Secret changed
)

// sentRestart is one POST /connectors/{c}/restart the pass sent.
type sentRestart struct {
	kind restartKind
	at   time.Time
	// request is the annotation request answered (restartRequested).
	request *RestartRequest
	// attempt is the automatic restart's number in its series (restartAuto).
	attempt int32
}

// observedLimits is the task limit of the connector: the runtime's answer,
// or the operator's estimate before it runs.
type observedLimits struct {
	limit TaskLimit
	// tasks and reason are EffectiveTasks(requested, limit).
	tasks  int32
	reason plugin.Reason
	// effective is status.effectiveTasks: the runtime's count when it
	// answered, 0 for a stopped connector.
	effective int32
}

// loopStep is one stage of a pass; it records in l what it saw and did.
type loopStep func(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error

// reconcileConnector runs one pass: observe the cluster and the runtime,
// then act (create, write the config, restart on a Secret rotation, move
// the state, restart on request or failure), then observe the outcome. It
// writes nothing to the KafkaConnector but its finalizer.
func (r *Reconciler) reconcileConnector(ctx context.Context, kc *v1alpha1.KafkaConnector) (*connectorLoop, error) {
	l := &connectorLoop{requeue: r.resync()}
	defer func() {
		if l.acted() {
			r.views.markActed(kc.Namespace + "/" + kc.Name)
		}
	}()
	for _, step := range []loopStep{
		r.observeCluster, r.observeRuntime,
		r.checkSinkGroup, r.createConnector, r.reconcileConfig, r.applyOffsets, r.rotateSecrets, r.convergeState,
		r.observeOutcome,
	} {
		if err := step(ctx, kc, l); err != nil || l.stop() {
			return l, err
		}
	}
	return l, nil
}

// observeCluster finds the ConnectCluster, checks the config's Secret
// references and that the workers may read them, and reaches the workers.
func (r *Reconciler) observeCluster(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	cc, err := r.cluster(ctx, kc)
	if err != nil {
		return err
	}
	if cc == nil {
		l.fail(v1alpha1.ReasonClusterNotFound, "ConnectCluster %q does not exist in namespace %s", kc.Spec.ClusterRef.Name, kc.Namespace)
		return nil
	}
	l.cluster = cc
	if l.refs, err = clusterkit.SecretRefs(kc.Spec.Config); err != nil {
		l.fail(v1alpha1.ReasonConfigInvalid, "%v", err)
		return nil
	}
	// Only what the cluster's owner allows (spec.connectorAccess): naming a
	// Secret is not enough to be given it.
	if p := clusterkit.ConnectorAccessProblem(cc, kc.Spec.Config); p != nil {
		l.fail(p.Reason, "%s", p.Message)
		return nil
	}
	l.desired = WithExactlyOnce(DesiredConfig(kc.Name, kc.Spec.Class, kc.RequestedTasksMax(), kc.Spec.Config), string(kc.Spec.ExactlyOnce))
	// The workers resolve the Secrets when the connector starts: do not
	// start it (or give it a new config) before they may read them.
	missing, err := r.ungrantedSecrets(ctx, cc, l.refs)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		l.fail(ReasonSecretsNotGranted, "waiting for the workers of ConnectCluster %s to be allowed to read Secret(s) %s (Role %s, kept by the ConnectCluster reconciler)",
			cc.Name, strings.Join(missing, ", "), clusterkit.SecretsRoleName(cc))
		return nil
	}
	if l.workers, err = r.workerClient(ctx, cc); err != nil {
		l.fail(v1alpha1.ReasonClusterNotReady, "cannot reach the workers of ConnectCluster %s: %v", cc.Name, err)
	}
	return nil
}

// observeRuntime reads the connector's status from its cluster's view, or
// from the workers when the view has none.
func (r *Reconciler) observeRuntime(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	var st connectapi.ConnectorStateInfo
	var err error
	key := kc.Namespace + "/" + kc.Name
	if !r.views.unchanged(key, kc.ResourceVersion) {
		st, err = l.workers.Status(ctx, kc.Name)
	} else if e, ok := r.views.entry(ctx, l.cluster, r.viewRead(l.cluster, l.workers), key, kc.Name, r.viewAge(), r.now()); ok {
		l.view, st = &e, *e.Status
	} else {
		st, err = l.workers.Status(ctx, kc.Name)
	}
	switch {
	case workerclient.IsNotFound(err):
		l.missing = true
	case err != nil:
		l.fail(v1alpha1.ReasonClusterNotReady, "reading the connector status from the workers: %v", err)
	case !controllerutil.ContainsFinalizer(kc, Finalizer) && !r.finalizerAdded(ctx, kc):
		l.fail(ReasonConnectorNotManaged, "a connector named %q already exists in ConnectCluster %s and was not created by this KafkaConnector; Conveyor leaves it alone: delete it through the REST API or rename this KafkaConnector", kc.Name, l.cluster.Name)
	default:
		l.runtime = &st
	}
	return nil
}

// finalizerAdded reports whether the API server's copy of kc holds the
// finalizer that kc, read from the cache, lacks: a pass adds the finalizer
// and creates the connector, and the next pass may still read the cached
// object from before the finalizer (with thousands of connectors created
// at once the cache trails by seconds), which took the connector just
// created for one made by someone else and warned ConnectorNotManaged.
func (r *Reconciler) finalizerAdded(ctx context.Context, kc *v1alpha1.KafkaConnector) bool {
	live := &v1alpha1.KafkaConnector{}
	if err := r.apiReader().Get(ctx, client.ObjectKeyFromObject(kc), live); err != nil {
		return false
	}
	return live.UID == kc.UID && controllerutil.ContainsFinalizer(live, Finalizer)
}

// createConnector validates and creates a missing connector, adding the
// finalizer first.
func (r *Reconciler) createConnector(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	if !l.missing {
		return nil
	}
	if r.validate(ctx, kc, l); l.stop() {
		return nil
	}
	if !controllerutil.ContainsFinalizer(kc, Finalizer) {
		// The status is computed from l, not from kc, so the patch may
		// refresh kc from the server.
		patch := client.MergeFrom(kc.DeepCopy())
		controllerutil.AddFinalizer(kc, Finalizer)
		if err := r.Client.Patch(ctx, kc, patch); err != nil {
			return fmt.Errorf("adding finalizer %s: %w", Finalizer, err)
		}
	}
	_, err := l.workers.CreateConnector(ctx, kc.Name, l.desired, createState(kc))
	switch {
	case errors.Is(err, connectapi.ErrAlreadyExists):
		// Created concurrently: look again at once.
		l.again = true
		return nil
	case errors.Is(err, connectapi.ErrBadRequest):
		l.fail(v1alpha1.ReasonConfigInvalid, "the workers refused to create the connector: %v", err)
		return nil
	case err != nil:
		l.fail(v1alpha1.ReasonClusterNotReady, "creating the connector: %v", err)
		return nil
	}
	l.created = true
	st, err := l.workers.Status(ctx, kc.Name)
	if err != nil && !workerclient.IsNotFound(err) {
		return fmt.Errorf("reading the status of new connector %q: %w", kc.Name, err)
	}
	l.runtime = &st
	// Annotations present at creation are recorded, not acted on.
	_, handled := PendingRestarts(kc.Annotations, handledRestarts(kc), true)
	l.handled = &handled
	return nil
}

// validate asks the worker to validate the config; a refusal (naming the
// fields) is the pass's problem.
func (r *Reconciler) validate(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) {
	infos, err := l.workers.Validate(ctx, kc.Spec.Class, l.desired)
	switch {
	case workerclient.IsNotFound(err):
		l.fail(v1alpha1.ReasonPluginNotFound, "the workers have no connector plugin %q", kc.Spec.Class)
	case err != nil:
		l.fail(v1alpha1.ReasonClusterNotReady, "validating the config: %v", err)
	default:
		if msg := ValidationMessage(infos); msg != "" {
			l.fail(v1alpha1.ReasonConfigInvalid, "%s", msg)
		}
	}
}

func handledRestarts(kc *v1alpha1.KafkaConnector) HandledRestarts {
	return HandledRestarts{Restart: kc.Status.LastRestartAnnotation, RestartTasks: kc.Status.LastRestartTasksAnnotation}
}

// lastRestart is when the last restart was sent: this pass's, else the
// recorded one (zero when none).
func (l *connectorLoop) lastRestart(kc *v1alpha1.KafkaConnector) time.Time {
	if n := len(l.restarts); n > 0 {
		return l.restarts[n-1].at
	}
	if kc.Status.LastRestartTime != nil {
		return kc.Status.LastRestartTime.Time
	}
	return time.Time{}
}

// restartCount is status.restarts as this pass leaves it.
func (l *connectorLoop) currentRestartCount(kc *v1alpha1.KafkaConnector) int32 {
	if l.restartCount != nil {
		return *l.restartCount
	}
	return kc.Status.Restarts
}

// convergeState applies, in order and one per pass, a restart request, the
// target state and autoRestart. A connector created this pass is left alone.
func (r *Reconciler) convergeState(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	if l.created {
		return nil
	}
	now := r.now()
	key := kc.Namespace + "/" + kc.Name

	req, handled := PendingRestarts(kc.Annotations, handledRestarts(kc), false)
	if req != nil {
		// A one-shot action: confirm it against the API server's object, as
		// the cache may not have this reconciler's last status write yet.
		if live := r.live(ctx, kc); live != nil {
			req, handled = PendingRestarts(live.Annotations, handledRestarts(live), false)
		}
	}
	if req != nil {
		if _, err := l.workers.Restart(ctx, kc.Name, req.IncludeTasks, req.OnlyFailed); err != nil {
			return fmt.Errorf("restarting connector %q on request: %w", kc.Name, err)
		}
		zero := int32(0) // a restart by hand resets the automatic count
		l.handled, l.restartCount = &handled, &zero
		l.restarts = append(l.restarts, sentRestart{kind: restartRequested, at: now, request: req})
		l.wakeWithin(time.Second)
		return nil
	}

	last, _ := r.lastSent.Load(key)
	lastAction, _ := last.(StateAction)
	action := DecideStateAction(kc.TargetState(), l.runtime.Connector.State, lastAction)
	var err error
	switch action {
	case StatePause:
		err = l.workers.Pause(ctx, kc.Name)
	case StateResume:
		err = l.workers.Resume(ctx, kc.Name)
	case StateStop:
		err = l.workers.Stop(ctx, kc.Name)
	}
	if err != nil {
		return fmt.Errorf("%s connector %q: %w", action, kc.Name, err)
	}
	if action != StateNone {
		r.lastSent.Store(key, action)
		l.action = action
		l.wakeWithin(time.Second)
		return nil
	}

	if kc.TargetState() != TargetRunning {
		return nil
	}
	d := DecideAutoRestart(AutoRestartInput{
		Policy:      AutoRestartPolicy{Enabled: kc.AutoRestartEnabled(), MaxRestarts: kc.Spec.AutoRestart.MaxRestarts},
		Failed:      Failed(*l.runtime),
		HeldByCrash: connectapi.HeldByCrash(*l.runtime),
		Count:       kc.Status.Restarts,
		LastRestart: l.lastRestart(kc),
		Now:         now,
	}, r.backoff())
	l.restartCount = &d.Count
	if d.Restart {
		if _, err := l.workers.Restart(ctx, kc.Name, true, true); err != nil {
			return fmt.Errorf("restarting failed connector %q: %w", kc.Name, err)
		}
		l.restarts = append(l.restarts, sentRestart{kind: restartAuto, at: now, attempt: d.Count})
		l.wakeWithin(time.Second)
		return nil
	}
	l.wakeWithin(d.RequeueAfter)
	return nil
}

// observeOutcome reads what the runtime reports once the pass acted: task
// limits, active topics, a sink's lag; and gives up on a connector that
// keeps failing after spec.autoRestart.maxRestarts.
func (r *Reconciler) observeOutcome(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	log := logf.FromContext(ctx)
	l.limits = r.observeLimits(ctx, kc, l)
	if l.view != nil && l.view.Topics != nil && !l.acted() {
		l.topics = sortedTopics(l.view.Topics.Topics)
	} else if info, err := l.workers.Topics(ctx, kc.Name); err == nil {
		l.topics = sortedTopics(info.Topics)
	} else if !workerclient.IsNotFound(err) {
		log.V(1).Info("reading active topics failed", "error", err.Error())
	}
	if isSink(kc.Spec.Config) && r.Lag != nil {
		if lag, err := r.Lag(ctx, l.cluster, kc.SinkGroup()); err != nil {
			log.V(1).Info("reading the sink's consumer lag failed", "error", err.Error())
		} else {
			l.lagRead, l.lag = true, lag
		}
	}
	l.done = true
	// A status about to change with nothing in the API server to say so
	// (a worker died): look again before the resync, at the workers
	// themselves, not at a cluster view of this pass's time.
	if d := LookAgainWithin(*l.runtime, WorkerIDs(l.workers.Endpoints()), l.cluster.LostWorkerDelay()); d > 0 {
		l.wakeWithin(d)
		r.views.markActed(kc.Namespace + "/" + kc.Name)
	}
	if n := l.currentRestartCount(kc); n > 0 && giveUp(kc, n, *l.runtime) {
		l.fail(v1alpha1.ReasonRestartLimitReached, "the connector failed again after %d automatic restarts (autoRestart.maxRestarts); restart it with the %s annotation", n, AnnotationRestart)
	}
	return nil
}

// sortedTopics is a sorted copy of topics, nil when there is none.
func sortedTopics(ts []string) *[]string {
	topics := append([]string(nil), ts...)
	sort.Strings(topics)
	if len(topics) == 0 {
		topics = nil
	}
	return &topics
}

func giveUp(kc *v1alpha1.KafkaConnector, restarts int32, st connectapi.ConnectorStateInfo) bool {
	m := kc.Spec.AutoRestart.MaxRestarts
	return kc.AutoRestartEnabled() && m != nil && restarts >= *m && Failed(st)
}

// observeLimits reads the runtime's task limits or, before the connector
// reports them, makes the operator's own estimate.
func (r *Reconciler) observeLimits(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) *observedLimits {
	var tl TaskLimit
	effective := int32(-1)
	lim, err := connectapi.Limits{}, error(nil)
	if l.view != nil && l.view.Limits != nil && !l.acted() {
		lim = *l.view.Limits
	} else {
		lim, err = l.workers.Limits(ctx, kc.Name)
	}
	if err == nil {
		tl = TaskLimitFromRuntime(lim)
		effective = int32(lim.EffectiveTasks)
	} else {
		in := EstimateInput{Class: kc.Spec.Class, Config: l.desired}
		if topics := SinkTopics(l.desired); len(topics) > 0 && r.Partitions != nil {
			counts, perr := r.Partitions(ctx, l.cluster, topics)
			if perr != nil {
				logf.FromContext(ctx).V(1).Info("reading partition counts for the task estimate failed", "error", perr.Error())
			}
			in.PartitionCounts = counts
		}
		tl = EstimateTaskLimit(in)
	}
	n, reason := EffectiveTasks(kc.RequestedTasksMax(), tl)
	if effective < 0 {
		effective = n
	}
	if kc.TargetState() == TargetStopped {
		effective = 0
	}
	return &observedLimits{limit: tl, tasks: n, reason: reason, effective: effective}
}

// checkSinkGroup refuses a sink whose consumer group another ConnectCluster's
// sink on the same Kafka already uses. It runs on every pass, before the
// connector is created or its config written, so a change of class or
// topics (a source turned into a sink) is checked as a creation is.
func (r *Reconciler) checkSinkGroup(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	conflict, err := r.sinkGroupConflict(ctx, kc, l.cluster)
	if err != nil {
		return err
	}
	if conflict != nil {
		l.fail(v1alpha1.ReasonSinkGroupConflict, "%s", conflict.Message(kc.SinkGroup()))
	}
	return nil
}

// sinkGroupConflict finds a sink of another ConnectCluster on the same
// Kafka that already uses consumer group connect-<name>.
func (r *Reconciler) sinkGroupConflict(ctx context.Context, kc *v1alpha1.KafkaConnector, cc *v1alpha1.ConnectCluster) (*SinkGroupConflict, error) {
	if !isSink(kc.Spec.Config) {
		return nil, nil
	}
	var all v1alpha1.KafkaConnectorList
	if err := r.Client.List(ctx, &all); err != nil {
		return nil, fmt.Errorf("listing KafkaConnectors for sink group conflicts: %w", err)
	}
	self := SinkGroupUser{Namespace: kc.Namespace, Name: kc.Name, Cluster: cc.Name,
		Brokers: NormalizeBrokers(cc.Spec.Kafka.BootstrapServers), KafkaClusterID: cc.Status.KafkaClusterID, CreatedAt: kc.CreationTimestamp.UnixNano()}
	var others []SinkGroupUser
	for i := range all.Items {
		o := &all.Items[i]
		if o.Name != kc.Name || o.Namespace == kc.Namespace || !isSink(o.Spec.Config) {
			continue
		}
		occ := &v1alpha1.ConnectCluster{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Spec.ClusterRef.Name}, occ); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading ConnectCluster %s/%s: %w", o.Namespace, o.Spec.ClusterRef.Name, err)
		}
		others = append(others, SinkGroupUser{Namespace: o.Namespace, Name: o.Name, Cluster: occ.Name,
			Brokers: NormalizeBrokers(occ.Spec.Kafka.BootstrapServers), KafkaClusterID: occ.Status.KafkaClusterID, CreatedAt: o.CreationTimestamp.UnixNano()})
	}
	if c := FindSinkGroupConflict(self, others); c != nil {
		return c, nil
	}
	// A worker group of the same name on the same Kafka: a consumer and
	// a Connect worker cannot share one group.
	var clusters v1alpha1.ConnectClusterList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("listing ConnectClusters for sink group conflicts: %w", err)
	}
	for i := range clusters.Items {
		occ := &clusters.Items[i]
		u := SinkGroupUser{Brokers: NormalizeBrokers(occ.Spec.Kafka.BootstrapServers), KafkaClusterID: occ.Status.KafkaClusterID}
		if occ.GroupID() == kc.SinkGroup() && u.sameKafka(&self) {
			return &SinkGroupConflict{Namespace: occ.Namespace, Cluster: occ.Name, WorkerGroup: true}, nil
		}
	}
	return nil, nil
}

func isSink(config map[string]string) bool {
	_, t := config["topics"]
	_, re := config["topics.regex"]
	return t || re
}
