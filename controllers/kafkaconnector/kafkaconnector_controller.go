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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
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
	// DefaultResync is how often a connector's runtime status is read again
	// when nothing in the API server changed (the worker does not notify us).
	DefaultResync = 30 * time.Second
	// DefaultResyncStretch is how far, by default, the reads of a cluster
	// whose workers answer the same read after read are spread out, in
	// resyncs: 4 x 30s = 2m, Strimzi's default reconciliation interval
	// (clusterView.maxAge).
	DefaultResyncStretch = 4
	// maxNotReadyRetry bounds the retry period while the cluster has no
	// Ready worker.
	maxNotReadyRetry = 15 * time.Second
	// DefaultConcurrency is the default MaxConcurrentReconciles: 1000
	// connectors on 5 clusters were Ready in 92s with 8, 61s with 32.
	DefaultConcurrency = 32
	// lookAgain is how soon a pass that found the runtime changing under it
	// runs again.
	lookAgain = 100 * time.Millisecond
)

// Reconciler reconciles KafkaConnectors into connectors on their cluster's
// workers.
type Reconciler struct {
	Client client.Client
	// APIReader reads Secrets past the cache (the manager's GetAPIReader):
	// the operator caches Secrets' metadata only. Client when nil.
	APIReader client.Reader
	// SecretMetadata reads the watched metadata of Secrets (the manager's
	// cache), so that a cluster's REST token is read again only when its
	// Secret changed; nil reads it on every pass.
	SecretMetadata client.Reader
	Recorder       events.EventRecorder
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
	// DriftBackoff is the revert schedule of driftPolicy enforce
	// (DefaultDriftBackoff when zero).
	DriftBackoff Backoff
	// Resync is how often a connector's runtime status is read again when
	// nothing in the API server changed (DefaultResync when zero); tests
	// shorten it.
	Resync time.Duration
	// ResyncMax is how long a cluster's whole read serves while read after
	// read found its workers unchanged (DefaultResyncStretch resyncs when
	// zero; at most Resync turns the stretching off).
	ResyncMax time.Duration

	// MaxConcurrentReconciles is how many KafkaConnectors are reconciled at
	// once (DefaultConcurrency when zero): a pass mostly waits on the
	// workers and the API server, so one at a time made 1000 connectors
	// wait in line. Creations sent together to one cluster also share its
	// rebalances (a worker answers writes after the rebalance in progress,
	// and config changes that arrive together make one rebalance).
	MaxConcurrentReconciles int

	// views are the whole-cluster runtime reads the passes share.
	views clusterViews
	// tokens are the clusters' REST tokens (resttoken.go).
	tokens keptTokens

	// lastSent remembers the last state action sent per connector (see
	// DecideStateAction). In memory only: after an operator restart at most
	// one action is repeated.
	lastSent sync.Map
}

// SetupWithManager registers the watches: every KafkaConnector, the
// ConnectClusters they run on (a cluster change enqueues its connectors
// through the clusterkit.ConnectorClusterRefIndex field index, which
// clusterkit.SetupIndexes registers once for both reconcilers) and the
// metadata of Secrets (a Secret change enqueues the connectors that
// reference it, through the SecretRefIndex registered here).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	statusmetrics.Caches("kafkaconnector", r.CacheEntries)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.KafkaConnector{}, SecretRefIndex, SecretNamesOf); err != nil {
		return fmt.Errorf("indexing KafkaConnectors by %s: %w", SecretRefIndex, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.KafkaConnector{}).
		Watches(&v1alpha1.ConnectCluster{}, forgetOnDelete{handler.EnqueueRequestsFromMapFunc(r.connectorsOfCluster), r.forgetCluster}).
		// Metadata only: the values never enter the operator's cache; the
		// reconcile reads the referenced Secrets one GET at a time.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(ConnectorsUsingSecret(r.Client)), builder.OnlyMetadata).
		Named("kafkaconnector").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.concurrency()}).
		Complete(statusmetrics.TrackReconciles("KafkaConnector", r))
}

// forgetOnDelete passes every event on to its handler and, for a deleted
// object, first calls forget with its namespace/name.
type forgetOnDelete struct {
	handler.EventHandler
	forget func(key string)
}

func (h forgetOnDelete) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.forget(e.Object.GetNamespace() + "/" + e.Object.GetName())
	h.EventHandler.Delete(ctx, e, q)
}

// forget drops what the reconciler keeps about a KafkaConnector that is gone.
func (r *Reconciler) forget(connector string) {
	r.views.forgetConnector(connector)
	r.lastSent.Delete(connector)
}

// forgetCluster drops what the reconciler keeps about a ConnectCluster that
// is gone.
func (r *Reconciler) forgetCluster(cluster string) {
	r.views.forgetCluster(cluster)
	r.tokens.forget(cluster)
}

// CacheEntries counts what the reconciler keeps in memory between passes,
// by cache (the conveyor_operator_cache_entries metric).
func (r *Reconciler) CacheEntries() map[string]int {
	out := r.views.entries()
	out["lastSent"] = statusmetrics.SyncMapLen(&r.lastSent)
	out["restTokens"] = r.tokens.len()
	return out
}

// connectorsOfCluster maps a ConnectCluster to requests for its connectors.
func (r *Reconciler) connectorsOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.KafkaConnectorList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{clusterkit.ConnectorClusterRefIndex: o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "listing the connectors of a ConnectCluster", "connectcluster", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, kc := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}})
	}
	return reqs
}

func (r *Reconciler) concurrency() int {
	if r.MaxConcurrentReconciles > 0 {
		return r.MaxConcurrentReconciles
	}
	return DefaultConcurrency
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

func (r *Reconciler) viewAge() viewAge {
	quietMax := r.ResyncMax
	if quietMax <= 0 {
		quietMax = DefaultResyncStretch * r.resync()
	}
	return viewAge{resync: r.resync(), quietMax: max(quietMax, r.resync())}
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

// Reconcile fetches the KafkaConnector, runs one pass (observe, then act,
// recorded in a connectorLoop), computes the status from what the pass saw,
// writes it once when it changed and emits the events of what changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	kc := &v1alpha1.KafkaConnector{}
	if err := r.Client.Get(ctx, req.NamespacedName, kc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.String())
			statusmetrics.DeleteConnector(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !kc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, kc)
	}
	l, err := r.reconcileConnector(ctx, kc)
	status := computeStatus(kc, l, metav1.NewTime(r.now()))
	r.views.leave(req.String(), kc.ResourceVersion) // writeStatus records its own
	if werr := r.writeStatus(ctx, kc, status); werr != nil {
		err = errors.Join(err, werr)
	}
	statusmetrics.Connector(kc.Namespace, kc.Name, kc.Spec.ClusterRef.Name, meta.FindStatusCondition(status.Conditions, v1alpha1.KafkaConnectorReady))
	r.emitEvents(kc, status, l)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.requeue(l)}, nil
}

// requeue is when the pass recorded in l wants to look again: a pass that
// stopped on a problem retries as problemPolicies says (or waits for a
// watch event); one that reached its end resyncs, sooner when an action
// or a backoff asks.
func (r *Reconciler) requeue(l *connectorLoop) time.Duration {
	if l.again {
		return lookAgain
	}
	if l.problem != nil && !l.done {
		if retry := problemPolicies[l.problem.Reason].retry; retry != nil {
			return retry(r)
		}
		return 0
	}
	return l.requeue
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
		tok, err := r.restToken(ctx, cc)
		if err != nil {
			return nil, err
		}
		opts.Token = tok
	}
	return workerclient.Connect(ctx, r.Resolver, cc, opts)
}
