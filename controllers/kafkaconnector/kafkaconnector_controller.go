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
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// The operator's permissions for KafkaConnectors: Secrets (REST tokens, Kafka
// credentials, the values connectors reference) are read one at a time,
// uncached; their metadata only is watched, so that a rotated Secret
// restarts the connectors that reference it. Pods are listed to find a
// cluster's Ready workers.
//
// +kubebuilder:rbac:groups=connect.conveyor.dev,resources=kafkaconnectors,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=connect.conveyor.dev,resources=kafkaconnectors/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=connect.conveyor.dev,resources=kafkaconnectors/finalizers,verbs=update
// +kubebuilder:rbac:groups=connect.conveyor.dev,resources=connectclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

const (
	// Finalizer marks a connector this KafkaConnector manages in the runtime.
	// The operator adds it before it creates the connector, and only then, so
	// "finalizer present" is exactly "Conveyor manages this connector": a
	// connector of the same name that someone created through the REST API
	// is never taken over, and never deleted.
	Finalizer = "connect.conveyor.dev/connector"
	// ClusterRefIndex indexes KafkaConnectors by spec.clusterRef.name.
	ClusterRefIndex = "spec.clusterRef.name"
	// DefaultResync is how often a connector's runtime status is read again
	// when nothing in the API server changed (the worker does not notify us).
	DefaultResync = 30 * time.Second
	// maxNotReadyRetry bounds the retry period while the cluster has no
	// Ready worker.
	maxNotReadyRetry = 15 * time.Second
)

// Reconciler reconciles KafkaConnectors into connectors on their cluster's
// workers.
type Reconciler struct {
	Client client.Client
	// APIReader reads Secrets past the cache (the manager's GetAPIReader):
	// the operator caches Secrets' metadata only. Client when nil.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Resolver finds the Ready workers of a cluster (workerclient.PodResolver
	// in production).
	Resolver workerclient.Resolver
	// ClientOptions configures worker clients; Token is filled per cluster.
	ClientOptions workerclient.Options
	// Partitions reads partition counts for the pre-run estimate of a sink;
	// nil skips the estimate (the runtime's answer still arrives).
	Partitions func(ctx context.Context, cc *v1alpha1.ConnectCluster, topics []string) (map[string]int32, error)
	// Lag reads a sink's consumer group lag (SinkLag with a kadm client for
	// the cluster's Kafka); nil leaves status.lag empty.
	Lag func(ctx context.Context, cc *v1alpha1.ConnectCluster, group string) (*int64, error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Backoff is the autoRestart schedule (DefaultBackoff when zero).
	Backoff Backoff
	// Resync is how often a connector's runtime status is read again when
	// nothing in the API server changed (DefaultResync when zero); tests
	// shorten it.
	Resync time.Duration

	// lastSent remembers the last state action sent per connector (see
	// DecideStateAction). In memory only: after an operator restart at most
	// one action is repeated.
	lastSent sync.Map
}

// SetupWithManager registers the watches: every KafkaConnector, the
// ConnectClusters they run on (a cluster change enqueues its connectors
// through the ClusterRefIndex field index) and the metadata of Secrets (a
// Secret change enqueues the connectors that reference it, through the
// SecretRefIndex registered here). The ClusterRefIndex is shared with the
// ConnectCluster reconciler and registered once by
// connectcluster.SetupIndexes (same name, same function as clusterRefOf).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.KafkaConnector{}, SecretRefIndex, SecretNamesOf); err != nil {
		return fmt.Errorf("indexing KafkaConnectors by %s: %w", SecretRefIndex, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.KafkaConnector{}).
		Watches(&v1alpha1.ConnectCluster{}, handler.EnqueueRequestsFromMapFunc(r.connectorsOfCluster)).
		// Metadata only: the values never enter the operator's cache; the
		// reconcile reads the referenced Secrets one GET at a time.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(ConnectorsUsingSecret(r.Client)), builder.OnlyMetadata).
		Named("kafkaconnector").
		Complete(r)
}

func clusterRefOf(o client.Object) []string {
	kc, ok := o.(*v1alpha1.KafkaConnector)
	if !ok || kc.Spec.ClusterRef.Name == "" {
		return nil
	}
	return []string{kc.Spec.ClusterRef.Name}
}

// connectorsOfCluster maps a ConnectCluster to requests for its connectors.
func (r *Reconciler) connectorsOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.KafkaConnectorList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{ClusterRefIndex: o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "listing the connectors of a ConnectCluster", "connectcluster", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, kc := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}})
	}
	return reqs
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return DefaultResync
}

func (r *Reconciler) notReadyRetry() time.Duration { return min(r.resync(), maxNotReadyRetry) }

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

func (r *Reconciler) backoff() Backoff {
	if r.Backoff.Initial <= 0 {
		return DefaultBackoff
	}
	return r.Backoff
}

// Reconcile fetches the KafkaConnector, converges its connector in the
// runtime and writes status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	kc := &v1alpha1.KafkaConnector{}
	if err := r.Client.Get(ctx, req.NamespacedName, kc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !kc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, kc)
	}
	orig := kc.DeepCopy()
	res, err := r.reconcileConnector(ctx, kc)
	kc.Status.ObservedGeneration = kc.Generation
	if perr := r.writeStatus(ctx, orig, kc); perr != nil {
		err = errors.Join(err, perr)
	}
	return res, err
}

// writeStatus patches status only when it changed: one write per loop.
func (r *Reconciler) writeStatus(ctx context.Context, orig, kc *v1alpha1.KafkaConnector) error {
	if equality.Semantic.DeepEqual(orig.Status, kc.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, kc, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing the status of KafkaConnector %s/%s: %w", kc.Namespace, kc.Name, err)
	}
	return nil
}

func setCondition(kc *v1alpha1.KafkaConnector, c metav1.Condition) {
	c.ObservedGeneration = kc.Generation
	meta.SetStatusCondition(&kc.Status.Conditions, c)
}

func notReady(kc *v1alpha1.KafkaConnector, reason, format string, args ...any) {
	setCondition(kc, metav1.Condition{Type: v1alpha1.KafkaConnectorReady, Status: metav1.ConditionFalse, Reason: reason,
		Message: truncate(fmt.Sprintf(format, args...), maxConditionMessage)})
}

func (r *Reconciler) event(kc *v1alpha1.KafkaConnector, eventType, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(kc, nil, eventType, reason, action, format, args...)
	}
}

// cluster fetches the ConnectCluster of kc; nil when it does not exist.
func (r *Reconciler) cluster(ctx context.Context, kc *v1alpha1.KafkaConnector) (*v1alpha1.ConnectCluster, error) {
	cc := &v1alpha1.ConnectCluster{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: kc.Namespace, Name: kc.Spec.ClusterRef.Name}, cc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConnectCluster %s/%s: %w", kc.Namespace, kc.Spec.ClusterRef.Name, err)
	}
	return cc, nil
}

// workerClient reads the cluster's REST token and resolves its workers.
func (r *Reconciler) workerClient(ctx context.Context, cc *v1alpha1.ConnectCluster) (*workerclient.Client, error) {
	opts := r.ClientOptions
	if cc.RestAuthenticationEnabled() {
		ref := cc.RestTokenSecret()
		var s corev1.Secret
		if err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: cc.Namespace, Name: ref.Name}, &s); err != nil {
			return nil, fmt.Errorf("reading the REST token Secret %s/%s: %w", cc.Namespace, ref.Name, err)
		}
		tok, ok := s.Data[ref.Key]
		if !ok || len(tok) == 0 {
			return nil, fmt.Errorf("REST token Secret %s/%s has no key %q", cc.Namespace, ref.Name, ref.Key)
		}
		opts.Token = strings.TrimSpace(string(tok)) // the workers trim the file too
	}
	return workerclient.Connect(ctx, r.Resolver, cc, opts)
}

// reconcileConnector converges the connector and fills kc.Status; it does
// not write the KafkaConnector except to add the finalizer.
func (r *Reconciler) reconcileConnector(ctx context.Context, kc *v1alpha1.KafkaConnector) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	requested := kc.RequestedTasksMax()
	kc.Status.TasksMax = requested

	cc, err := r.cluster(ctx, kc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cc == nil {
		notReady(kc, v1alpha1.ReasonClusterNotFound, "ConnectCluster %q does not exist in namespace %s", kc.Spec.ClusterRef.Name, kc.Namespace)
		return ctrl.Result{}, nil // the ConnectCluster watch brings us back
	}
	refs, err := connectcluster.SecretRefs(kc.Spec.Config)
	if err != nil {
		notReady(kc, v1alpha1.ReasonConfigInvalid, "%v", err)
		return ctrl.Result{}, nil
	}
	if p := connectcluster.ConnectorAccessProblem(cc, kc.Spec.Config); p != nil {
		notReady(kc, p.Reason, "%s", p.Message)
		return ctrl.Result{}, nil // the ConnectCluster watch brings us back
	}
	desired := DesiredConfig(kc.Name, kc.Spec.Class, requested, kc.Spec.Config)
	// The workers resolve the Secrets when the connector starts: do not
	// start it (or give it a new config) before they may read them.
	if missing, err := r.ungrantedSecrets(ctx, cc, refs); err != nil {
		return ctrl.Result{}, err
	} else if len(missing) > 0 {
		notReady(kc, ReasonSecretsNotGranted, "waiting for the workers of ConnectCluster %s to be allowed to read Secret(s) %s (Role %s, kept by the ConnectCluster reconciler)",
			cc.Name, strings.Join(missing, ", "), connectcluster.SecretsRoleName(cc))
		return ctrl.Result{RequeueAfter: secretsGrantRetry}, nil
	}

	wc, err := r.workerClient(ctx, cc)
	if err != nil {
		notReady(kc, v1alpha1.ReasonClusterNotReady, "cannot reach the workers of ConnectCluster %s: %v", cc.Name, err)
		return ctrl.Result{RequeueAfter: r.notReadyRetry()}, nil
	}

	st, err := wc.Status(ctx, kc.Name)
	justCreated, configWritten := false, false
	switch {
	case workerclient.IsNotFound(err):
		created, res, err := r.create(ctx, kc, cc, wc, desired)
		if !created {
			return res, err
		}
		justCreated = true
		if st, err = wc.Status(ctx, kc.Name); err != nil && !workerclient.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading the status of new connector %q: %w", kc.Name, err)
		}
	case err != nil:
		notReady(kc, v1alpha1.ReasonClusterNotReady, "reading the connector status from the workers: %v", err)
		return ctrl.Result{RequeueAfter: r.notReadyRetry()}, nil
	case !controllerutil.ContainsFinalizer(kc, Finalizer):
		notReady(kc, ReasonConnectorNotManaged, "a connector named %q already exists in ConnectCluster %s and was not created by this KafkaConnector; Conveyor leaves it alone: delete it through the REST API or rename this KafkaConnector", kc.Name, cc.Name)
		return ctrl.Result{}, nil
	default:
		var done bool
		if configWritten, done, err = r.updateConfig(ctx, kc, wc, desired); done || err != nil {
			return ctrl.Result{}, err
		}
	}
	// A new connector, or one whose config was just written, starts with
	// the current values: no rotation restart on top.
	if err := r.observeSecrets(ctx, kc, wc, refs, justCreated || configWritten); err != nil {
		return ctrl.Result{}, err
	}

	requeue := r.resync()
	if !justCreated {
		if after, err := r.converge(ctx, kc, wc, st); err != nil {
			return ctrl.Result{}, err
		} else if after > 0 && after < requeue {
			requeue = after
		}
	} else {
		// Annotations present at creation are recorded, not acted on.
		_, handled := PendingRestarts(kc.Annotations, handledRestarts(kc), true)
		kc.Status.LastRestartAnnotation, kc.Status.LastRestartTasksAnnotation = handled.Restart, handled.RestartTasks
	}

	r.observeLimits(ctx, kc, cc, wc, requested, desired)
	if info, err := wc.Topics(ctx, kc.Name); err == nil {
		topics := append([]string(nil), info.Topics...)
		sort.Strings(topics)
		if len(topics) == 0 {
			topics = nil
		}
		kc.Status.Topics = topics
	} else if !workerclient.IsNotFound(err) {
		log.V(1).Info("reading active topics failed", "error", err.Error())
	}
	RuntimeStatus(st, &kc.Status)
	if isSink(kc.Spec.Config) && r.Lag != nil {
		lag, err := r.Lag(ctx, cc, kc.SinkGroup())
		if err != nil {
			log.V(1).Info("reading the sink's consumer lag failed", "error", err.Error())
		} else {
			kc.Status.Lag = lag
		}
	}
	if kc.Status.Restarts > 0 && r.giveUp(kc, st) {
		notReady(kc, v1alpha1.ReasonRestartLimitReached, "the connector failed again after %d automatic restarts (autoRestart.maxRestarts); restart it with the %s annotation", kc.Status.Restarts, AnnotationRestart)
	} else {
		setCondition(kc, ReadyCondition(kc.TargetState(), st, kc.Status.EffectiveTasks, kc.Generation))
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// create validates and creates the connector, adding the finalizer first.
// created is false when the reconcile must stop here (res, err say how).
func (r *Reconciler) create(ctx context.Context, kc *v1alpha1.KafkaConnector, cc *v1alpha1.ConnectCluster, wc *workerclient.Client, desired map[string]string) (created bool, res ctrl.Result, err error) {
	if ok, err := r.validate(ctx, kc, wc, desired); !ok || err != nil {
		return false, ctrl.Result{}, err
	}
	if conflict, err := r.sinkGroupConflict(ctx, kc, cc); err != nil {
		return false, ctrl.Result{}, err
	} else if conflict != nil {
		notReady(kc, v1alpha1.ReasonSinkGroupConflict, "%s", conflict.Message(kc.SinkGroup()))
		return false, ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(kc, Finalizer) {
		// The patch answer carries the stored status; keep the one being built.
		status := kc.Status.DeepCopy()
		patch := client.MergeFrom(kc.DeepCopy())
		controllerutil.AddFinalizer(kc, Finalizer)
		err := r.Client.Patch(ctx, kc, patch)
		kc.Status = *status
		if err != nil {
			return false, ctrl.Result{}, fmt.Errorf("adding finalizer %s: %w", Finalizer, err)
		}
	}
	_, err = wc.CreateConnector(ctx, kc.Name, desired, InitialState(kc.TargetState()))
	if errors.Is(err, connectapi.ErrAlreadyExists) {
		return false, ctrl.Result{Requeue: true}, nil // created concurrently: look again
	}
	if errors.Is(err, connectapi.ErrBadRequest) {
		notReady(kc, v1alpha1.ReasonConfigInvalid, "the workers refused to create the connector: %v", err)
		return false, ctrl.Result{}, nil
	}
	if err != nil {
		notReady(kc, v1alpha1.ReasonClusterNotReady, "creating the connector: %v", err)
		return false, ctrl.Result{RequeueAfter: r.notReadyRetry()}, nil
	}
	r.event(kc, corev1.EventTypeNormal, "Created", "Create", "created connector %s in ConnectCluster %s (%s)", kc.Name, cc.Name, InitialState(kc.TargetState()))
	return true, ctrl.Result{}, nil
}

// validate asks the worker to validate the config; false (with Ready=False
// naming the fields) when it refuses.
func (r *Reconciler) validate(ctx context.Context, kc *v1alpha1.KafkaConnector, wc *workerclient.Client, desired map[string]string) (bool, error) {
	infos, err := wc.Validate(ctx, kc.Spec.Class, desired)
	if workerclient.IsNotFound(err) {
		notReady(kc, v1alpha1.ReasonPluginNotFound, "the workers have no connector plugin %q", kc.Spec.Class)
		return false, nil
	}
	if err != nil {
		notReady(kc, v1alpha1.ReasonClusterNotReady, "validating the config: %v", err)
		return false, nil
	}
	if msg := ValidationMessage(infos); msg != "" {
		notReady(kc, v1alpha1.ReasonConfigInvalid, "%s", msg)
		return false, nil
	}
	return true, nil
}

// updateConfig writes the config when it really differs; written says it
// did, done that the reconcile must stop (the new config is invalid).
func (r *Reconciler) updateConfig(ctx context.Context, kc *v1alpha1.KafkaConnector, wc *workerclient.Client, desired map[string]string) (written, done bool, err error) {
	stored, err := wc.ConnectorConfig(ctx, kc.Name)
	if err != nil {
		return false, false, fmt.Errorf("reading the config of connector %q: %w", kc.Name, err)
	}
	diff := DiffConfig(desired, stored)
	if diff.Empty() {
		return false, false, nil
	}
	if ok, err := r.validate(ctx, kc, wc, desired); !ok || err != nil {
		return false, true, err
	}
	if _, _, err := wc.PutConnectorConfig(ctx, kc.Name, desired); err != nil {
		return false, false, fmt.Errorf("updating the config of connector %q: %w", kc.Name, err)
	}
	r.event(kc, corev1.EventTypeNormal, "ConfigUpdated", "Update", "updated the config of connector %s (keys %v)", kc.Name, diff.Keys())
	return true, false, nil
}

// observeSecrets records the digest of the referenced Secret values in
// status and, when it changed since the last pass (a rotation), restarts
// the connector and all its tasks so they resolve the new values. fresh
// means the connector was just created or got a new config, so it already
// starts with the current values. A stopped connector only records the
// digest: its tasks resolve the values when they start again.
func (r *Reconciler) observeSecrets(ctx context.Context, kc *v1alpha1.KafkaConnector, wc *workerclient.Client, refs []connectcluster.SecretRef, fresh bool) error {
	hash, err := r.secretsHash(ctx, kc.Namespace, refs)
	if err != nil {
		// Unknown is not a rotation: keep the recorded digest, look again
		// at the next pass.
		logf.FromContext(ctx).Info("reading the Secrets the connector references failed", "error", err.Error())
		return nil
	}
	if !fresh && kc.TargetState() != TargetStopped && SecretRotated(kc.Status.SecretsHash, hash) {
		if _, err := wc.Restart(ctx, kc.Name, true, false); err != nil {
			return fmt.Errorf("restarting connector %q after a change of the Secrets it references: %w", kc.Name, err)
		}
		kc.Status.LastRestartTime = &metav1.Time{Time: r.now()}
		r.event(kc, corev1.EventTypeNormal, "SecretsRotated", "Restart", "restarted connector %s and its tasks: a Secret it references changed (%s)",
			kc.Name, strings.Join(connectcluster.SecretNames(refs), ", "))
	}
	kc.Status.SecretsHash = hash
	return nil
}

// secretsHash reads the referenced Secrets (a missing one counts as absent)
// and digests the referenced keys (SecretsHash).
func (r *Reconciler) secretsHash(ctx context.Context, namespace string, refs []connectcluster.SecretRef) (string, error) {
	if len(refs) == 0 {
		return "", nil
	}
	data := map[string]map[string][]byte{}
	for _, name := range connectcluster.SecretNames(refs) {
		var s corev1.Secret
		err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return "", fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
		}
		data[name] = s.Data
	}
	return SecretsHash(refs, data), nil
}

// secretsGrantRetry is how soon a connector waiting for the workers' Role
// looks again (the ConnectCluster reconciler updates the Role within moments).
const secretsGrantRetry = time.Second

// ungrantedSecrets returns the referenced Secrets that the workers' Role of
// cc (connectcluster.BuildSecretsRole, applied by the ConnectCluster
// reconciler) does not let them read yet.
func (r *Reconciler) ungrantedSecrets(ctx context.Context, cc *v1alpha1.ConnectCluster, refs []connectcluster.SecretRef) ([]string, error) {
	names := connectcluster.SecretNames(refs)
	if len(names) == 0 {
		return nil, nil
	}
	var role rbacv1.Role
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: cc.Namespace, Name: connectcluster.SecretsRoleName(cc)}, &role)
	switch {
	case apierrors.IsNotFound(err):
		return names, nil
	case err != nil:
		return nil, fmt.Errorf("reading the workers' Role %s/%s: %w", cc.Namespace, connectcluster.SecretsRoleName(cc), err)
	case !metav1.IsControlledBy(&role, cc):
		return names, nil
	}
	granted := map[string]bool{}
	for _, rule := range role.Rules {
		if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "secrets") && slices.Contains(rule.Verbs, "get") {
			for _, n := range rule.ResourceNames {
				granted[n] = true
			}
		}
	}
	var missing []string
	for _, n := range names {
		if !granted[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

func handledRestarts(kc *v1alpha1.KafkaConnector) HandledRestarts {
	return HandledRestarts{Restart: kc.Status.LastRestartAnnotation, RestartTasks: kc.Status.LastRestartTasksAnnotation}
}

// converge applies restart requests, the target state and autoRestart.
func (r *Reconciler) converge(ctx context.Context, kc *v1alpha1.KafkaConnector, wc *workerclient.Client, st connectapi.ConnectorStateInfo) (time.Duration, error) {
	now := r.now()
	key := kc.Namespace + "/" + kc.Name

	if req, handled := PendingRestarts(kc.Annotations, handledRestarts(kc), false); req != nil {
		if _, err := wc.Restart(ctx, kc.Name, req.IncludeTasks, req.OnlyFailed); err != nil {
			return 0, fmt.Errorf("restarting connector %q on request: %w", kc.Name, err)
		}
		kc.Status.LastRestartAnnotation, kc.Status.LastRestartTasksAnnotation = handled.Restart, handled.RestartTasks
		kc.Status.Restarts = 0 // a restart by hand resets the automatic count
		kc.Status.LastRestartTime = &metav1.Time{Time: now}
		r.event(kc, corev1.EventTypeNormal, "Restarted", "Restart", "restarted connector %s on request (%s=%s)", kc.Name, req.Annotation, req.Value)
		return time.Second, nil
	}

	last, _ := r.lastSent.Load(key)
	lastAction, _ := last.(StateAction)
	action := DecideStateAction(kc.TargetState(), st.Connector.State, lastAction)
	var err error
	switch action {
	case StatePause:
		err = wc.Pause(ctx, kc.Name)
	case StateResume:
		err = wc.Resume(ctx, kc.Name)
	case StateStop:
		err = wc.Stop(ctx, kc.Name)
	}
	if err != nil {
		return 0, fmt.Errorf("%s connector %q: %w", action, kc.Name, err)
	}
	if action != StateNone {
		r.lastSent.Store(key, action)
		r.event(kc, corev1.EventTypeNormal, "StateChanged", string(action), "asked the workers to %s connector %s", action, kc.Name)
		return time.Second, nil
	}

	if kc.TargetState() != TargetRunning {
		return 0, nil
	}
	var lastRestart time.Time
	if kc.Status.LastRestartTime != nil {
		lastRestart = kc.Status.LastRestartTime.Time
	}
	d := DecideAutoRestart(AutoRestartInput{
		Policy:      AutoRestartPolicy{Enabled: kc.AutoRestartEnabled(), MaxRestarts: kc.Spec.AutoRestart.MaxRestarts},
		Failed:      Failed(st),
		Count:       kc.Status.Restarts,
		LastRestart: lastRestart,
		Now:         now,
	}, r.backoff())
	kc.Status.Restarts = d.Count
	if d.Restart {
		if _, err := wc.Restart(ctx, kc.Name, true, true); err != nil {
			return 0, fmt.Errorf("restarting failed connector %q: %w", kc.Name, err)
		}
		kc.Status.LastRestartTime = &metav1.Time{Time: now}
		r.event(kc, corev1.EventTypeWarning, "AutoRestarted", "Restart", "restarted failed connector %s and its failed tasks (attempt %d)", kc.Name, d.Count)
		return time.Second, nil
	}
	return d.RequeueAfter, nil
}

func (r *Reconciler) giveUp(kc *v1alpha1.KafkaConnector, st connectapi.ConnectorStateInfo) bool {
	m := kc.Spec.AutoRestart.MaxRestarts
	return kc.AutoRestartEnabled() && m != nil && kc.Status.Restarts >= *m && Failed(st)
}

// observeLimits mirrors the runtime's task limits into status, or, before
// the connector reports them, the operator's own estimate.
func (r *Reconciler) observeLimits(ctx context.Context, kc *v1alpha1.KafkaConnector, cc *v1alpha1.ConnectCluster, wc *workerclient.Client, requested int32, desired map[string]string) {
	var tl TaskLimit
	effective := int32(-1)
	if lim, err := wc.Limits(ctx, kc.Name); err == nil {
		tl = TaskLimitFromRuntime(lim)
		effective = int32(lim.EffectiveTasks)
	} else {
		in := EstimateInput{Class: kc.Spec.Class, Config: desired}
		if topics := SinkTopics(desired); len(topics) > 0 && r.Partitions != nil {
			counts, perr := r.Partitions(ctx, cc, topics)
			if perr != nil {
				logf.FromContext(ctx).V(1).Info("reading partition counts for the task estimate failed", "error", perr.Error())
			}
			in.PartitionCounts = counts
		}
		tl = EstimateTaskLimit(in)
	}
	n, reason := EffectiveTasks(requested, tl)
	if effective < 0 {
		effective = n
	}
	if kc.TargetState() == TargetStopped {
		effective = 0
	}
	kc.Status.EffectiveTasks = effective
	if tl.Natural != nil {
		kc.Status.TaskLimit = &v1alpha1.TaskLimit{Value: *tl.Natural, Reason: string(tl.Reason)}
	} else {
		kc.Status.TaskLimit = nil
	}
	was := meta.IsStatusConditionTrue(kc.Status.Conditions, v1alpha1.KafkaConnectorTasksLimited)
	cond := TasksLimitedCondition(requested, n, reason, kc.Generation)
	setCondition(kc, cond)
	if cond.Status == metav1.ConditionTrue && !was {
		r.event(kc, corev1.EventTypeNormal, "TasksLimited", "Limit", "%s", cond.Message)
	}
}

// sinkGroupConflict finds a sink of another ConnectCluster on the same
// brokers that already uses consumer group connect-<name>.
func (r *Reconciler) sinkGroupConflict(ctx context.Context, kc *v1alpha1.KafkaConnector, cc *v1alpha1.ConnectCluster) (*SinkGroupConflict, error) {
	if !isSink(kc.Spec.Config) {
		return nil, nil
	}
	var all v1alpha1.KafkaConnectorList
	if err := r.Client.List(ctx, &all); err != nil {
		return nil, fmt.Errorf("listing KafkaConnectors for sink group conflicts: %w", err)
	}
	self := SinkGroupUser{Namespace: kc.Namespace, Name: kc.Name, Cluster: cc.Name,
		Brokers: NormalizeBrokers(cc.Spec.Kafka.BootstrapServers), CreatedAt: kc.CreationTimestamp.UnixNano()}
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
			Brokers: NormalizeBrokers(occ.Spec.Kafka.BootstrapServers), CreatedAt: o.CreationTimestamp.UnixNano()})
	}
	return FindSinkGroupConflict(self, others), nil
}

func isSink(config map[string]string) bool {
	_, t := config["topics"]
	_, re := config["topics.regex"]
	return t || re
}

// ClusterOfConnector maps a KafkaConnector to a request for its
// ConnectCluster: the ConnectCluster reconciler watches KafkaConnectors with
// it (handler.EnqueueRequestsFromMapFunc), so task totals, the replica floor
// and the ScaledObject's triggers follow connector changes within seconds.
func ClusterOfConnector(_ context.Context, o client.Object) []reconcile.Request {
	kc, ok := o.(*v1alpha1.KafkaConnector)
	if !ok || kc.Spec.ClusterRef.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: kc.Namespace, Name: kc.Spec.ClusterRef.Name}}}
}
