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

package connectcluster

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
)

// The operator's permissions for ConnectClusters. Secrets are read one at a
// time with an uncached reader (their values never enter the cache; the
// KafkaConnector reconciler watches their metadata only) and only the
// generated REST token Secret is written.
//
// +kubebuilder:rbac:groups=connect.conveyor.dev,resources=connectclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=connect.conveyor.dev,resources=connectclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=connect.conveyor.dev,resources=connectclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=connect.conveyor.dev,resources=kafkaconnectors,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps;serviceaccounts,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// The workers' Role for the Secrets their connectors reference. RBAC lets
// the operator grant "get" on those Secrets only because it holds "get" on
// Secrets itself (no escalate or bind verbs needed).
//
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;patch;delete

// Options configures the reconciler.
type Options struct {
	// WorkerImage is the image of clusters that name none (the operator's own).
	WorkerImage string
	// OperatorNamespace is admitted to the workers' REST port.
	OperatorNamespace string
	// AdminFactory opens the Kafka admin client; nil means NewKadmAdmin.
	AdminFactory AdminFactory
	// KafkaTimeout bounds one round of topic checks (default 10s).
	KafkaTimeout time.Duration
	// TopicRecheckInterval is how often verified topics are checked again, and
	// how often a healthy cluster is reconciled (default 5m).
	TopicRecheckInterval time.Duration
	// RetryBase and RetryMax bound the backoff after a Kafka problem (default 1s and 2m).
	RetryBase, RetryMax time.Duration
	// Autoscaler converges the KEDA ScaledObject of clusters with autoscaling
	// on; nil until the KafkaConnector reconciler provides one.
	Autoscaler clusterkit.Autoscaler
	// PodMonitors says whether the PodMonitor CRD is installed; nil means
	// it is not (metrics.podMonitor then reports PodMonitorCRDNotInstalled).
	PodMonitors CRDServed
	// Wake, when set, enqueues the ConnectCluster of every event received
	// (controllers.Setup sends the autoscaling clusters when KEDA is
	// installed or removed, so they need not wait for TopicRecheckInterval).
	Wake <-chan event.GenericEvent
	// Clock and Rand default to the real ones.
	Clock clock.PassiveClock
	Rand  io.Reader
	// UnmanagedConnectors, when set, lists the connectors on a cluster's
	// workers that no KafkaConnector manages, for
	// status.unmanagedConnectors; ConnectorScanInterval is how often a
	// healthy cluster is scanned (default DefaultConnectorScanInterval).
	UnmanagedConnectors   UnmanagedScanner
	ConnectorScanInterval time.Duration
	// MaxConcurrentReconciles defaults to 4: a cluster whose Kafka is down
	// must not hold up the others for KafkaTimeout each.
	MaxConcurrentReconciles int
}

// Reconciler turns ConnectClusters into workers.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	opts      Options

	// applied lets a pass skip children it would apply unchanged.
	applied clusterkit.ApplyMemo

	mu       sync.Mutex
	verified map[types.NamespacedName]topicCheckRecord
	// eosChecked remembers successful transaction probes (exactlyonce.go).
	eosChecked map[types.NamespacedName]topicCheckRecord
	failures   map[types.NamespacedName]int
	// departed is each cluster's last check of its groups for the members
	// of deleted pods (departed.go).
	departed map[types.NamespacedName]departedCheck
	// clusterIDs remembers the Kafka cluster id each cluster's Kafka reported.
	clusterIDs map[types.NamespacedName]clusterIDRecord
}

type clusterIDRecord struct {
	uid       types.UID
	bootstrap string
	id        string
	at        time.Time
}

type topicCheckRecord struct {
	uid types.UID
	key string
	at  time.Time
}

// NewReconciler builds the reconciler from a manager's clients.
func NewReconciler(mgr ctrl.Manager, opts Options) *Reconciler {
	if opts.AdminFactory == nil {
		log := mgr.GetLogger().WithName("kafka")
		opts.AdminFactory = func(_ context.Context, conn clusterkit.KafkaConnection) (TopicAdmin, error) {
			return NewKadmAdmin(conn, withKgoLogger(log))
		}
	}
	if opts.KafkaTimeout <= 0 {
		opts.KafkaTimeout = 10 * time.Second
	}
	if opts.TopicRecheckInterval <= 0 {
		opts.TopicRecheckInterval = 5 * time.Minute
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = 2 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 4
	}
	return &Reconciler{
		client:     mgr.GetClient(),
		apiReader:  mgr.GetAPIReader(),
		recorder:   mgr.GetEventRecorder("conveyor-operator"),
		opts:       opts,
		verified:   map[types.NamespacedName]topicCheckRecord{},
		eosChecked: map[types.NamespacedName]topicCheckRecord{},
		failures:   map[types.NamespacedName]int{},
		departed:   map[types.NamespacedName]departedCheck{},
	}
}

// SetupWithManager registers the controller. clusterkit.SetupIndexes must have run.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	statusmetrics.Caches("connectcluster", r.CacheEntries)
	b := ctrl.NewControllerManagedBy(mgr)
	if r.opts.Wake != nil {
		b = b.WatchesRawSource(source.Channel(r.opts.Wake, &handler.EnqueueRequestForObject{}))
	}
	return b.
		For(&v1alpha1.ConnectCluster{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		// Connector totals feed the capacity rule; their Secret references
		// the workers' Role.
		Watches(&v1alpha1.KafkaConnector{}, handler.EnqueueRequestsFromMapFunc(connectorToCluster),
			builder.WithPredicates(connectorTotalsChanged())).
		// A cluster that appears, changes its group or goes away settles the
		// group conflicts of the others claiming the same group.
		Watches(&v1alpha1.ConnectCluster{}, handler.EnqueueRequestsFromMapFunc(r.sameGroupClusters)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles}).
		Named("connectcluster").
		Complete(statusmetrics.TrackReconciles("ConnectCluster", r))
}

// connectorToCluster maps a KafkaConnector to a request for its
// ConnectCluster, so task totals, the replica floor and the ScaledObject's
// triggers follow connector changes within seconds.
func connectorToCluster(_ context.Context, o client.Object) []reconcile.Request {
	names := clusterkit.ClusterRefOf(o)
	if names == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: names[0]}}}
}

// connectorTotalsChanged passes connector events that can change a cluster's totals,
// its autoscaling triggers or the Secrets its workers may read.
func connectorTotalsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.KafkaConnector)
			n, ok2 := e.ObjectNew.(*v1alpha1.KafkaConnector)
			// Everything the totals and the derived ScaledObject's triggers
			// depend on (see autoscaling.ConnectorsFrom).
			return !ok1 || !ok2 || o.Status.EffectiveTasks != n.Status.EffectiveTasks || o.Spec.ClusterRef != n.Spec.ClusterRef ||
				o.Spec.State != n.Spec.State || o.Status.State != n.Status.State ||
				o.Spec.Config["topics"] != n.Spec.Config["topics"] || o.Spec.Config["topics.regex"] != n.Spec.Config["topics.regex"] ||
				secretNamesChanged(o, n)
		},
	}
}

func (r *Reconciler) sameGroupClusters(ctx context.Context, o client.Object) []reconcile.Request {
	cc, ok := o.(*v1alpha1.ConnectCluster)
	if !ok {
		return nil
	}
	var list v1alpha1.ConnectClusterList
	if err := r.client.List(ctx, &list, client.MatchingFields{clusterkit.ClusterGroupIDIndex: cc.GroupID()}); err != nil {
		logf.FromContext(ctx).Error(err, "listing ConnectClusters of a group", "groupId", cc.GroupID())
		return nil
	}
	var out []reconcile.Request
	for _, other := range list.Items {
		if other.Namespace == cc.Namespace && other.Name == cc.Name {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: other.Namespace, Name: other.Name}})
	}
	return out
}

// ClusterTotals sums the connectors of a cluster: how many KafkaConnectors
// name it in spec.clusterRef and their status.effectiveTasks.
func ClusterTotals(ctx context.Context, c client.Reader, cc *v1alpha1.ConnectCluster) (clusterkit.Totals, error) {
	kcs, err := clusterConnectors(ctx, c, cc)
	if err != nil {
		return clusterkit.Totals{}, err
	}
	return totalsOf(kcs), nil
}

// clusterConnectors lists the KafkaConnectors whose clusterRef names cc.
func clusterConnectors(ctx context.Context, c client.Reader, cc *v1alpha1.ConnectCluster) ([]v1alpha1.KafkaConnector, error) {
	var list v1alpha1.KafkaConnectorList
	if err := c.List(ctx, &list, client.InNamespace(cc.Namespace), client.MatchingFields{clusterkit.ConnectorClusterRefIndex: cc.Name}); err != nil {
		return nil, fmt.Errorf("listing the KafkaConnectors of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
	}
	return list.Items, nil
}

func totalsOf(kcs []v1alpha1.KafkaConnector) clusterkit.Totals {
	var t clusterkit.Totals
	for _, kc := range kcs {
		t.Connectors++
		t.Tasks += kc.Status.EffectiveTasks
	}
	return t
}

// Reconcile runs one loop for one ConnectCluster: fetch, observe the children
// and Kafka, compute the status, converge the children, write the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cc := &v1alpha1.ConnectCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, cc); err != nil {
		if apierrors.IsNotFound(err) {
			// Owner references let the garbage collector remove the children.
			r.forget(req.NamespacedName)
			statusmetrics.DeleteCluster(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading ConnectCluster %s: %w", req.NamespacedName, err)
	}
	if !cc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	st, err := r.converge(ctx, cc)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.scanUnmanaged(ctx, cc, st)
	updated := computeStatus(cc, st, metav1.NewTime(r.opts.Clock.Now()))
	if err := r.writeStatus(ctx, cc, updated); err != nil {
		return ctrl.Result{}, err
	}
	statusmetrics.Cluster(cc.Namespace, cc.Name, meta.FindStatusCondition(updated.Conditions, v1alpha1.ConnectClusterReady), updated.DesiredReplicas, updated.ReadyReplicas)
	r.emitEvents(cc, updated, st)
	return r.result(req.NamespacedName, st), nil
}

// result picks the requeue: backoff after a Kafka or apply problem, the
// periodic topic re-check otherwise, sooner while the autoscaler waits for
// KEDA.
func (r *Reconciler) result(key types.NamespacedName, st *loopState) ctrl.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.retry {
		r.failures[key]++
		d := r.opts.RetryBase << min(r.failures[key]-1, 20)
		if d > r.opts.RetryMax || d <= 0 {
			d = r.opts.RetryMax
		}
		return ctrl.Result{RequeueAfter: d}
	}
	delete(r.failures, key)
	if st.conflict != nil {
		// The cluster waits for the winner to go; the watch on clusters of
		// the same group wakes it up.
		return ctrl.Result{}
	}
	next := r.opts.TopicRecheckInterval
	if r.opts.UnmanagedConnectors != nil {
		next = min(next, r.scanInterval())
	}
	if st.autoscaling != nil && st.autoscaling.RequeueAfter > 0 {
		next = min(next, st.autoscaling.RequeueAfter)
	}
	return ctrl.Result{RequeueAfter: next}
}

// forget drops what the reconciler keeps about a ConnectCluster that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.verified, key)
	delete(r.eosChecked, key)
	delete(r.clusterIDs, key)
	delete(r.departed, key)
	delete(r.failures, key)
	r.applied.Forget(key.String())
	if r.opts.UnmanagedConnectors != nil {
		r.opts.UnmanagedConnectors.ForgetCluster(key)
	}
	if f, ok := r.opts.Autoscaler.(interface{ Forget(types.NamespacedName) }); ok {
		f.Forget(key)
	}
}

// CacheEntries counts what the reconciler keeps in memory between passes,
// by cache (the conveyor_operator_cache_entries metric).
func (r *Reconciler) CacheEntries() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{"verified": len(r.verified), "eosChecked": len(r.eosChecked), "failures": len(r.failures),
		"departed": len(r.departed), "clusterIDs": len(r.clusterIDs), "applied": r.applied.Len()}
	if c, ok := r.opts.Autoscaler.(interface{ CacheEntries() int }); ok {
		n["autoscalingSettling"] = c.CacheEntries()
	}
	return n
}
