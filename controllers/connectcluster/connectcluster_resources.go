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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/condition"
)

// loopState is what one reconcile observed and decided; computeStatus and
// emitEvents read it.
type loopState struct {
	totals   clusterkit.Totals
	conflict *GroupConflict
	// kafkaClusterID is the id Kafka reported this loop ("" when not asked).
	kafkaClusterID string
	// problem stops the loop short of a converged cluster (Reconciled=False).
	problem *condition.Problem
	topics  topicsOutcome
	// departed are the static members of deleted pods removed this pass,
	// by group.
	departed map[string][]string
	// eos is the ExactlyOnce condition; nil when not checked this loop.
	eos *eosOutcome
	// capacity is the capacity rule's decision (without autoscaling).
	capacity    Capacity
	autoscaling *clusterkit.AutoscalingResult
	// deployment is the worker Deployment as observed before converging.
	deployment        *appsv1.Deployment
	deploymentCreated bool
	appliedReplicas   *int32
	// retry asks for a requeue with backoff.
	retry bool
	// monitoring is the Monitoring condition (nil: none wanted) once
	// monitoringDone says the PodMonitor was converged this loop.
	monitoring     *clusterkit.ConditionValue
	monitoringDone bool
	// unmanaged are the connectors no KafkaConnector manages (nil: not
	// scanned this loop).
	unmanaged *[]string

	// What the steps pass on to the later ones.
	connectors  []v1alpha1.KafkaConnector
	conn        clusterkit.KafkaConnection
	saslUser    string
	connProblem *condition.Problem // Kafka's credentials, when unusable
	replicas    *int32             // the Deployment's replicas; nil: the HPA's
	children    *Children
	// stopped ends the pass with the status recorded so far.
	stopped bool
}

type topicsOutcome struct {
	// state is "", "ok" or "failed"; "" means not checked this loop for
	// another reason (the problem or conflict says which).
	state   string
	reason  string
	message string
	created []string
}

// InternalTopics are the three internal topics a cluster wants.
func InternalTopics(cc *v1alpha1.ConnectCluster) []TopicSpec {
	rf := int16(cc.StorageReplicationFactor())
	return []TopicSpec{
		{Role: TopicRoleConfig, Name: cc.ConfigTopic(), Partitions: v1alpha1.ConfigTopicPartitions, ReplicationFactor: rf},
		{Role: TopicRoleOffset, Name: cc.OffsetTopic(), Partitions: cc.OffsetPartitions(), ReplicationFactor: rf},
		{Role: TopicRoleStatus, Name: cc.StatusTopic(), Partitions: cc.StatusPartitions(), ReplicationFactor: rf},
	}
}

// GroupClaimOf is the claim a cluster makes on its Kafka.
func GroupClaimOf(cc *v1alpha1.ConnectCluster) GroupClaim {
	return GroupClaim{
		Namespace:        cc.Namespace,
		Name:             cc.Name,
		Created:          cc.CreationTimestamp.Time,
		GroupID:          cc.GroupID(),
		BootstrapServers: NormalizeBootstrapServers([]string{cc.Spec.Kafka.BootstrapServers}),
		KafkaClusterID:   cc.Status.KafkaClusterID,
	}
}

// clusterStep is one stage of a pass; it records in st what it saw and did.
// An error ends the reconcile with that error (controller-runtime retries);
// st.stopped ends the pass early with the status st holds.
type clusterStep func(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error

// converge runs one pass: observe the connectors, Kafka and the group, check
// the credentials and the internal topics, decide the replicas, build and
// apply the children, then tidy up (departed members, the PodMonitor,
// children no longer wanted). It stops at the first step that ends the pass.
func (r *Reconciler) converge(ctx context.Context, cc *v1alpha1.ConnectCluster) (*loopState, error) {
	st := &loopState{}
	for _, step := range []clusterStep{
		r.observeConnectors, r.observeKafka, r.observeGroup, r.checkCredentials,
		r.checkTopics, r.decideReplicas, r.buildChildren, r.applyChildren,
		r.removeDepartedMembers, r.convergePodMonitor, r.deleteUnwanted,
	} {
		if err := step(ctx, cc, st); err != nil {
			return nil, err
		}
		if st.stopped {
			break
		}
	}
	return st, nil
}

// fail records a problem unless an earlier step recorded one, and asks for
// a retry with backoff when retry is set.
func (st *loopState) fail(reason, message string, retry bool) {
	if st.problem == nil {
		st.problem = &condition.Problem{Reason: reason, Message: message}
	}
	st.retry = st.retry || retry
}

// observeConnectors lists the cluster's connectors and sums their tasks.
func (r *Reconciler) observeConnectors(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	kcs, err := clusterConnectors(ctx, r.client, cc)
	if err != nil {
		return err
	}
	st.connectors, st.totals = kcs, totalsOf(kcs)
	return nil
}

// observeKafka reads how to reach Kafka and asks it for its cluster id. The
// id decides which clusters share a Kafka: asked first, so a cluster that
// names its Kafka another way never joins another's group, not even for one
// loop.
func (r *Reconciler) observeKafka(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	st.conn, st.saslUser, st.connProblem = clusterkit.KafkaConnectionFor(ctx, r.apiReader, cc)
	if st.connProblem == nil {
		// When Kafka does not answer, the id recorded in status stands in
		// and the topic check below reports the outage; no new workers
		// start without an id Kafka gave this loop.
		if id, err := r.kafkaClusterID(ctx, cc, st.conn); err == nil {
			st.kafkaClusterID = id
		}
	}
	return nil
}

// observeGroup finds a conflict over the worker group and reads the worker
// Deployment. The younger of two clusters claiming one group runs no
// workers: its Deployment is deleted and the pass ends.
func (r *Reconciler) observeGroup(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	self := GroupClaimOf(cc)
	if st.kafkaClusterID != "" {
		self.KafkaClusterID = st.kafkaClusterID
	}
	var peers v1alpha1.ConnectClusterList
	if err := r.client.List(ctx, &peers, client.MatchingFields{clusterkit.ClusterGroupIDIndex: cc.GroupID()}); err != nil {
		return fmt.Errorf("listing ConnectClusters claiming group %q: %w", cc.GroupID(), err)
	}
	claims := make([]GroupClaim, 0, len(peers.Items))
	for i := range peers.Items {
		claims = append(claims, GroupClaimOf(&peers.Items[i]))
	}
	st.conflict = FindGroupConflict(self, claims)

	dep := &appsv1.Deployment{}
	switch err := r.client.Get(ctx, types.NamespacedName{Namespace: cc.Namespace, Name: DeploymentName(cc)}, dep); {
	case apierrors.IsNotFound(err):
		dep = nil
	case err != nil:
		return fmt.Errorf("reading the worker Deployment: %w", err)
	}
	st.deployment = dep

	if st.conflict == nil {
		return nil
	}
	st.stopped = true
	if dep != nil && metav1.IsControlledBy(dep, cc) {
		if err := r.client.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the worker Deployment of a cluster in group conflict: %w", err)
		}
		r.applied.Drop("Deployment/" + dep.Namespace + "/" + dep.Name)
		logf.FromContext(ctx).Info("deleted the worker Deployment: group conflict", "winner", st.conflict.Winner.Key())
	}
	return nil
}

// checkCredentials ends the pass when Kafka's credentials or the REST token
// Secret are not usable.
func (r *Reconciler) checkCredentials(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	prob := st.connProblem
	if prob == nil {
		prob = r.checkTokenSecret(ctx, cc)
	}
	if prob != nil {
		st.problem, st.retry, st.stopped = prob, true, true
	}
	return nil
}

// checkTopics creates or checks the internal topics and, once they are in
// place, whether the workers may use transactions.
func (r *Reconciler) checkTopics(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	st.topics = r.ensureTopics(ctx, cc, st.conn)
	if st.topics.state == "failed" {
		st.problem = &condition.Problem{Reason: st.topics.reason, Message: st.topics.message}
		st.retry = true
	}
	if st.topics.state == "ok" {
		eos := r.checkExactlyOnce(ctx, cc, st.conn)
		st.eos = &eos
		if eos.status != metav1.ConditionTrue && eos.reason != v1alpha1.ReasonExactlyOnceDisabled {
			st.retry = true
		}
	}
	return nil
}

// decideReplicas applies the capacity rule, or, with autoscaling active,
// leaves the worker count to the HPA (the Deployment's replicas are handed
// over first).
func (r *Reconciler) decideReplicas(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	tasks, perWorker := int64(st.totals.Tasks), int64(cc.MaxTasksPerWorker())
	st.capacity = HardCeiling(cc, DesiredReplicas(cc.RequestedReplicas(), tasks, perWorker), tasks, perWorker)
	st.replicas = ptr.To(st.capacity.Replicas)
	if !cc.AutoscalingEnabled() || r.opts.Autoscaler == nil {
		return nil
	}
	res, err := r.opts.Autoscaler.ReconcileAutoscaling(ctx, cc, st.totals, DeploymentName(cc))
	if err != nil {
		res = clusterkit.AutoscalingResult{Autoscaling: clusterkit.ConditionValue{Reason: v1alpha1.ReasonReconcileFailed, Message: err.Error()}}
		st.fail(v1alpha1.ReasonReconcileFailed, "autoscaling: "+err.Error(), true)
	}
	st.autoscaling = &res
	if res.Active {
		st.replicas = nil
		if err := r.handOverReplicas(ctx, st.deployment); err != nil {
			st.fail(v1alpha1.ReasonReconcileFailed, err.Error(), true)
			st.stopped = true
		}
	}
	return nil
}

// buildChildren renders every child from the spec, the generated tokens and
// the Secrets the connectors may use; a spec that renders to nothing valid
// ends the pass.
func (r *Reconciler) buildChildren(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	var token, metricsToken string
	var err error
	if GeneratesRestToken(cc) {
		if token, err = r.generatedToken(ctx, cc, cc.RestTokenSecret(), "REST"); err != nil {
			return err
		}
	}
	if GeneratesMetricsToken(cc) {
		if metricsToken, err = r.generatedToken(ctx, cc, cc.MetricsTokenSecret(), "metrics"); err != nil {
			return err
		}
	}
	image := cc.Spec.Image
	if image == "" {
		image = r.opts.WorkerImage
	}
	if image == "" {
		st.problem = &condition.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: "spec.image is empty and the operator has no default worker image: set spec.image, or start the operator with --worker-image"}
		st.stopped = true
		return nil
	}
	st.children, err = BuildChildren(cc, ChildInputs{
		Image:             image,
		OperatorNamespace: r.opts.OperatorNamespace,
		Replicas:          st.replicas,
		RestToken:         token,
		MetricsToken:      metricsToken,
		SASLUsername:      st.saslUser,
		SecretNames:       AllowedSecretNames(cc, st.connectors...),
	})
	if err != nil {
		st.fail(v1alpha1.ReasonInvalidSpec, err.Error(), false)
		st.stopped = true
	}
	return nil
}

// applyChildren applies each child; the first that fails ends the pass.
func (r *Reconciler) applyChildren(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	children, dep := st.children, st.deployment
	for _, o := range children.Objects() {
		if o == children.Deployment && dep == nil && (st.topics.state != "ok" || st.kafkaClusterID == "") {
			// No workers before their internal topics are in place and
			// Kafka said which cluster it is (the group check needs it);
			// an existing Deployment keeps following the spec.
			if st.topics.state == "ok" {
				st.retry = true
			}
			continue
		}
		if err := r.apply(ctx, cc, o); err != nil {
			st.fail(v1alpha1.ReasonReconcileFailed, err.Error(), true)
			st.stopped = true
			return nil
		}
		if o == children.Deployment {
			st.deploymentCreated = dep == nil
			st.appliedReplicas = children.Deployment.Spec.Replicas
		}
	}
	return nil
}

// removeDepartedMembers removes the group members of deleted worker pods
// (departed.go). A failure is not a problem of the cluster: the members time
// out by themselves.
func (r *Reconciler) removeDepartedMembers(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	if st.deployment == nil || st.topics.state != "ok" {
		return nil
	}
	removed, err := r.removeDeparted(ctx, cc, st.conn, st.connectors)
	st.departed = removed
	if err != nil {
		logf.FromContext(ctx).Info("removing the group members of deleted worker pods failed; retrying later", "err", err.Error())
	}
	return nil
}

// convergePodMonitor keeps or removes the PodMonitor (podmonitor.go).
func (r *Reconciler) convergePodMonitor(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	mon, err := r.reconcilePodMonitor(ctx, cc)
	st.monitoring, st.monitoringDone = mon, true
	if err != nil {
		st.fail(v1alpha1.ReasonReconcileFailed, "PodMonitor: "+err.Error(), true)
	}
	return nil
}

// deleteUnwanted deletes the children the spec no longer asks for: the
// NetworkPolicy, and the Secrets Role and its binding when no connector
// references a Secret (the workers may then read none).
func (r *Reconciler) deleteUnwanted(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) error {
	var unwanted []client.Object
	if st.children.NetworkPolicy == nil {
		unwanted = append(unwanted, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName(cc)}})
	}
	if st.children.SecretsRole == nil {
		unwanted = append(unwanted, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterkit.SecretsRoleName(cc)}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: clusterkit.SecretsRoleName(cc)}})
	}
	for _, o := range unwanted {
		if err := r.deleteOwned(ctx, cc, o, o.GetName()); err != nil {
			st.fail(v1alpha1.ReasonReconcileFailed, err.Error(), true)
		}
	}
	return nil
}

// apply converges one child with server-side apply (clusterkit.ApplyChild); Secrets
// are read past the cache, as the operator does not watch them.
func (r *Reconciler) apply(ctx context.Context, cc *v1alpha1.ConnectCluster, o client.Object) error {
	var reader client.Reader = r.client
	if _, isSecret := o.(*corev1.Secret); isSecret {
		reader = r.apiReader
	}
	_, err := r.applied.Apply(ctx, r.client, reader, cc, o)
	return err
}

// ReplicasHandoffManager is the field manager that keeps spec.replicas of a
// Deployment whose count the autoscaler took over, until the HPA writes it.
const ReplicasHandoffManager = "conveyor-operator-replicas-handoff"

// handOverReplicas lets go of spec.replicas without resetting it. Dropping a
// field from an apply removes it when its manager was the only owner, and the
// Deployment would fall back to 1 replica until the HPA reacts; so, as the
// server-side apply documentation describes for handing replicas to an HPA,
// a second manager first applies the current value, then the operator's
// next apply leaves the field out.
func (r *Reconciler) handOverReplicas(ctx context.Context, dep *appsv1.Deployment) error {
	if dep == nil || dep.Spec.Replicas == nil || !ownsField(dep, clusterkit.FieldManager, "f:spec", "f:replicas") {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": dep.Name, "namespace": dep.Namespace},
		"spec":       map[string]any{"replicas": int64(*dep.Spec.Replicas)},
	}}
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(ReplicasHandoffManager)); err != nil {
		return fmt.Errorf("handing spec.replicas of Deployment %s over to the autoscaler: %w", dep.Name, err)
	}
	return nil
}

// ownsField reports whether manager's apply entry owns the field at path.
func ownsField(obj metav1.Object, manager string, path ...string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != manager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		cur := fields
		for i, p := range path {
			next, ok := cur[p]
			if !ok {
				break
			}
			if i == len(path)-1 {
				return true
			}
			if cur, ok = next.(map[string]any); !ok {
				break
			}
		}
	}
	return false
}

// deleteOwned deletes a child the cluster no longer wants, if the cluster controls it.
func (r *Reconciler) deleteOwned(ctx context.Context, cc *v1alpha1.ConnectCluster, obj client.Object, name string) error {
	what := fmt.Sprintf("%T", obj)
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		what = k // an unstructured object's kind (the PodMonitor)
	}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: cc.Namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", what, name, err)
	}
	if !metav1.IsControlledBy(obj, cc) {
		return nil
	}
	if err := r.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s: %w", what, name, err)
	}
	if gvk, err := apiutil.GVKForObject(obj, r.client.Scheme()); err == nil {
		r.applied.Drop(gvk.Kind + "/" + cc.Namespace + "/" + name)
	}
	return nil
}

// generatedToken returns the token of a generated token Secret (REST or
// metrics), creating a token only when the Secret does not exist yet (or
// holds none).
func (r *Reconciler) generatedToken(ctx context.Context, cc *v1alpha1.ConnectCluster, ref v1alpha1.SecretKeyRef, what string) (string, error) {
	var s corev1.Secret
	err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: cc.Namespace, Name: ref.Name}, &s)
	switch {
	case err == nil && len(s.Data[ref.Key]) > 0:
		return string(s.Data[ref.Key]), nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", fmt.Errorf("reading the %s token Secret %s: %w", what, ref.Name, err)
	}
	return NewRestToken(r.opts.Rand)
}

// checkTokenSecret reports a user-named REST token Secret that is missing:
// worker pods could not start without it.
func (r *Reconciler) checkTokenSecret(ctx context.Context, cc *v1alpha1.ConnectCluster) *condition.Problem {
	if !cc.RestAuthenticationEnabled() || GeneratesRestToken(cc) {
		return nil
	}
	_, prob := clusterkit.SecretValue(ctx, r.apiReader, cc.Namespace, cc.RestTokenSecret(), "spec.restApi.authentication.tokenSecret")
	return prob
}

// topicsKey identifies what a topic check verified: the brokers, the
// credentials' references and the wanted topics.
func topicsKey(cc *v1alpha1.ConnectCluster, wants []TopicSpec) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%v\x00%v\x00", cc.Spec.Kafka.BootstrapServers, cc.Spec.Kafka.TLS, cc.Spec.Kafka.SASL)
	for _, w := range wants {
		fmt.Fprintf(h, "%+v\x00", w)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ensureTopics creates or verifies the internal topics, at most once per
// TopicRecheckInterval while nothing about them changes.
// kafkaClusterID asks the cluster's Kafka for its cluster id, remembered
// per cluster and bootstrap list for TopicRecheckInterval.
func (r *Reconciler) kafkaClusterID(ctx context.Context, cc *v1alpha1.ConnectCluster, conn clusterkit.KafkaConnection) (string, error) {
	key := types.NamespacedName{Namespace: cc.Namespace, Name: cc.Name}
	bootstrap := strings.Join(conn.BootstrapServers, ",")
	now := r.opts.Clock.Now()
	r.mu.Lock()
	rec, ok := r.clusterIDs[key]
	r.mu.Unlock()
	if ok && rec.uid == cc.UID && rec.bootstrap == bootstrap && now.Sub(rec.at) < r.opts.TopicRecheckInterval {
		return rec.id, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.KafkaTimeout)
	defer cancel()
	admin, err := r.opts.AdminFactory(ctx, conn)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	id, err := admin.ClusterID(ctx)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	if r.clusterIDs == nil {
		r.clusterIDs = map[types.NamespacedName]clusterIDRecord{}
	}
	r.clusterIDs[key] = clusterIDRecord{uid: cc.UID, bootstrap: bootstrap, id: id, at: now}
	r.mu.Unlock()
	return id, nil
}

func (r *Reconciler) ensureTopics(ctx context.Context, cc *v1alpha1.ConnectCluster, conn clusterkit.KafkaConnection) topicsOutcome {
	wants := InternalTopics(cc)
	key := types.NamespacedName{Namespace: cc.Namespace, Name: cc.Name}
	tkey := topicsKey(cc, wants)
	now := r.opts.Clock.Now()
	r.mu.Lock()
	rec, ok := r.verified[key]
	r.mu.Unlock()
	okMsg := fmt.Sprintf("topics %s (1 partition), %s (%d partitions) and %s (%d partitions) exist with cleanup.policy=compact",
		wants[0].Name, wants[1].Name, wants[1].Partitions, wants[2].Name, wants[2].Partitions)
	if ok && rec.uid == cc.UID && rec.key == tkey && now.Sub(rec.at) < r.opts.TopicRecheckInterval {
		return topicsOutcome{state: "ok", reason: v1alpha1.ReasonTopicsReady, message: okMsg}
	}

	ctx, cancel := context.WithTimeout(ctx, r.opts.KafkaTimeout)
	defer cancel()
	fail := func(reason, msg string) topicsOutcome {
		r.mu.Lock()
		delete(r.verified, key)
		r.mu.Unlock()
		return topicsOutcome{state: "failed", reason: reason, message: msg}
	}
	admin, err := r.opts.AdminFactory(ctx, conn)
	if err != nil {
		return fail(v1alpha1.ReasonKafkaUnreachable, err.Error())
	}
	defer admin.Close()
	verdicts, err := EnsureTopics(ctx, admin, conn.BootstrapServers, wants)
	var invalid *TopicInvalidError
	switch {
	case errors.Is(err, ErrKafkaUnreachable):
		return fail(v1alpha1.ReasonKafkaUnreachable, err.Error()+"; check spec.kafka (bootstrap servers, TLS, SASL) and that the operator can reach the brokers")
	case errors.As(err, &invalid):
		reason := v1alpha1.ReasonTopicInvalid
		if invalid.OnlyCreateFailures() {
			reason = v1alpha1.ReasonTopicCreateFailed
		}
		return fail(reason, err.Error())
	case err != nil:
		return fail(v1alpha1.ReasonKafkaUnreachable, err.Error())
	}
	r.mu.Lock()
	r.verified[key] = topicCheckRecord{uid: cc.UID, key: tkey, at: now}
	r.mu.Unlock()
	return topicsOutcome{state: "ok", reason: v1alpha1.ReasonTopicsReady, message: okMsg, created: CreatedTopics(verdicts)}
}

func withKgoLogger(log logr.Logger) kgo.Opt { return kgo.WithLogger(NewKgoLogger(log)) }
