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

package autoscaling

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// The derived KEDA objects, read through the uncached API reader.
//
// +kubebuilder:rbac:groups=keda.sh,resources=scaledobjects;triggerauthentications,verbs=get;list;watch;create;patch;delete

// Converger keeps a cluster's derived ScaledObject and TriggerAuthentication
// as the builders say. It implements clusterkit.Autoscaler: the
// ConnectCluster reconciler calls it once per loop and writes the
// conditions it returns (one status writer).
type Converger struct {
	// Client must have KEDA's types in its scheme (kedav1alpha1.AddToScheme).
	Client client.Client
	// APIReader reads KEDA's objects straight from the API server (the
	// manager's GetAPIReader), so no informer is started on CRDs that may
	// not exist; nil reads through Client.
	APIReader client.Reader
	// KEDA says whether KEDA is installed (re-checked periodically). When it
	// also has a ScalingModifiers() bool method (KEDAChecker does), that says
	// whether the installed ScaledObject CRD has scalingModifiers, and a
	// ScalingModifiersFallback() bool method whether its fallback takes
	// behavior scalingModifiers; otherwise it is taken to have both.
	KEDA interface{ Served() bool }
	// Topics lists the topic names on a cluster's Kafka, to resolve the
	// topics of topics.regex sinks (kafkaconnector.KafkaReads.ListTopics).
	// It is called at every reconcile that has a running regex sink, so the
	// triggers follow topics as they appear and go. When it is nil or fails,
	// such a sink's topics are those its workers report (status.topics).
	Topics func(ctx context.Context, cc *v1alpha1.ConnectCluster) ([]string, error)

	// Clock times how long a ScaledObject has been settling; nil is the
	// real clock.
	Clock clock.PassiveClock

	mu sync.Mutex
	// settlingSince: when each cluster's ScaledObject began settling.
	settlingSince map[types.NamespacedName]time.Time
}

func (c *Converger) reader() client.Reader {
	if c.APIReader != nil {
		return c.APIReader
	}
	return c.Client
}

func (c *Converger) clock() clock.PassiveClock {
	if c.Clock != nil {
		return c.Clock
	}
	return clock.RealClock{}
}

func (c *Converger) features() Features {
	f := Features{ScalingModifiers: true, ScalingModifiersFallback: true}
	if k, ok := c.KEDA.(interface{ ScalingModifiers() bool }); ok {
		f.ScalingModifiers = k.ScalingModifiers()
	}
	if k, ok := c.KEDA.(interface{ ScalingModifiersFallback() bool }); ok {
		f.ScalingModifiersFallback = k.ScalingModifiersFallback()
	}
	f.ScalingModifiersFallback = f.ScalingModifiersFallback && f.ScalingModifiers
	return f
}

var _ clusterkit.Autoscaler = (*Converger)(nil)

// derivedLabels are the labels of the derived objects: the cluster's
// common child labels.
func derivedLabels(cc *v1alpha1.ConnectCluster) map[string]string {
	return clusterkit.CommonLabels(cc)
}

// ReconcileAutoscaling implements clusterkit.Autoscaler.
func (c *Converger) ReconcileAutoscaling(ctx context.Context, cc *v1alpha1.ConnectCluster, totals clusterkit.Totals, deploymentName string) (clusterkit.AutoscalingResult, error) {
	t := Target{DeploymentName: deploymentName, ServiceName: clusterkit.ServiceName(cc), Labels: derivedLabels(cc)}
	served := c.KEDA != nil && c.KEDA.Served()
	result := func(cond metav1.Condition, active bool, d *Decision) clusterkit.AutoscalingResult {
		r := clusterkit.AutoscalingResult{Active: active, Autoscaling: value(cond)}
		if d != nil {
			r.CapacityRaised = value(d.Condition(cc.Generation))
		}
		return r
	}
	if !cc.AutoscalingEnabled() || !served {
		c.settleRecheck(client.ObjectKeyFromObject(cc), false)
		if served {
			if err := c.deleteDerived(ctx, cc, t, true, true); err != nil {
				return clusterkit.AutoscalingResult{}, err
			}
			if err := c.deleteOwned(ctx, cc, &kedav1alpha1.TriggerAuthentication{}, t.BacklogTriggerAuthenticationName()); err != nil {
				return clusterkit.AutoscalingResult{}, err
			}
		}
		return result(AutoscalingCondition(ConditionInput{Enabled: cc.AutoscalingEnabled(), KEDAServed: served, Annotations: cc.Annotations}, cc.Generation), false, nil), nil
	}

	var list v1alpha1.KafkaConnectorList
	if err := c.Client.List(ctx, &list, client.InNamespace(cc.Namespace), client.MatchingFields{clusterkit.ConnectorClusterRefIndex: cc.Name}); err != nil {
		return clusterkit.AutoscalingResult{}, fmt.Errorf("listing the connectors of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
	}
	connectors := c.resolveTopics(ctx, cc, ConnectorsFrom(list.Items))
	f := c.features()
	so, d := BuildScaledObjectFor(cc, connectors, Totals{EffectiveTasks: totals.Tasks}, t, f)
	ta := BuildTriggerAuthentication(cc, t)
	bta := BuildBacklogTriggerAuthentication(cc, so, t)

	if ta != nil && so != nil {
		if _, err := c.apply(ctx, cc, ta); err != nil {
			return clusterkit.AutoscalingResult{}, err
		}
	} else if err := c.deleteDerived(ctx, cc, t, false, true); err != nil {
		return clusterkit.AutoscalingResult{}, err
	}
	if bta != nil {
		if _, err := c.apply(ctx, cc, bta); err != nil {
			return clusterkit.AutoscalingResult{}, err
		}
	} else if err := c.deleteOwned(ctx, cc, &kedav1alpha1.TriggerAuthentication{}, t.BacklogTriggerAuthenticationName()); err != nil {
		return clusterkit.AutoscalingResult{}, err
	}
	if so == nil {
		c.settleRecheck(client.ObjectKeyFromObject(cc), false)
		if err := c.deleteDerived(ctx, cc, t, true, false); err != nil {
			return clusterkit.AutoscalingResult{}, err
		}
		return result(AutoscalingCondition(ConditionInput{Enabled: true, KEDAServed: true, Annotations: cc.Annotations}, cc.Generation), false, &d), nil
	}
	stored, err := c.storedScaledObject(ctx, so)
	if err != nil {
		return clusterkit.AutoscalingResult{}, err
	}
	settling := Settle(so, stored)
	written, err := c.apply(ctx, cc, so)
	if err != nil {
		return clusterkit.AutoscalingResult{}, err
	}
	var applied kedav1alpha1.ScaledObject
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(written.Object, &applied); err != nil {
		return clusterkit.AutoscalingResult{}, fmt.Errorf("reading the applied ScaledObject %s/%s: %w", so.Namespace, so.Name, err)
	}
	cond := AutoscalingCondition(ConditionInput{
		Enabled: true, KEDAServed: true, Triggers: len(so.Spec.Triggers),
		WithoutScalingModifiers: !f.ScalingModifiers,
		ScaledObjectReady:       ScaledObjectReadyCondition(&applied),
		Unreadable:              UnreadableTriggers(&applied),
		Annotations:             cc.Annotations,
	}, cc.Generation)
	r := result(cond, true, &d)
	r.RequeueAfter = c.settleRecheck(client.ObjectKeyFromObject(cc), settling)
	return r, nil
}

// storedScaledObject reads the ScaledObject so will replace; nil when there
// is none.
func (c *Converger) storedScaledObject(ctx context.Context, so *kedav1alpha1.ScaledObject) (*kedav1alpha1.ScaledObject, error) {
	var stored kedav1alpha1.ScaledObject
	if err := c.reader().Get(ctx, client.ObjectKeyFromObject(so), &stored); err != nil {
		if kerrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ScaledObject %s/%s: %w", so.Namespace, so.Name, err)
	}
	return &stored, nil
}

// settleRecheck is how soon the ConnectCluster reconciler should look again
// at a cluster whose ScaledObject is settling (settle.go): every second at
// first, then less often the longer KEDA takes (at most every 30s, e.g. while
// KEDA is down); 0 once it has settled.
func (c *Converger) settleRecheck(cluster types.NamespacedName, settling bool) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !settling {
		delete(c.settlingSince, cluster)
		return 0
	}
	if c.settlingSince == nil {
		c.settlingSince = map[types.NamespacedName]time.Time{}
	}
	since, ok := c.settlingSince[cluster]
	if !ok {
		since = c.clock().Now()
		c.settlingSince[cluster] = since
	}
	return min(max(c.clock().Since(since)/4, time.Second), 30*time.Second)
}

// Forget drops what the converger keeps about a ConnectCluster that is gone
// (the ConnectCluster reconciler calls it with its own caches').
func (c *Converger) Forget(cluster types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.settlingSince, cluster)
}

// CacheEntries counts the clusters whose ScaledObject is settling.
func (c *Converger) CacheEntries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.settlingSince)
}

// resolveTopics sets the topics of running topics.regex sinks from the
// broker's topic list; without one (no Topics hook, or Kafka did not
// answer) they keep the topics their workers report.
func (c *Converger) resolveTopics(ctx context.Context, cc *v1alpha1.ConnectCluster, cs []Connector) []Connector {
	if c.Topics == nil || !NeedsTopicList(cs) {
		return cs
	}
	all, err := c.Topics(ctx, cc)
	if err != nil {
		logf.FromContext(ctx).Info("listing topics for the topics.regex sinks failed; their triggers use the topics their workers report", "error", err.Error())
		return cs
	}
	// As the sinks' own subscriptions, never the cluster's internal topics.
	reserved := plugin.NewReservedTopics(cc.ConfigTopic(), cc.OffsetTopic(), cc.StatusTopic())
	return ResolveRegexTopics(cs, slices.DeleteFunc(all, reserved.Reserved))
}

func value(c metav1.Condition) clusterkit.ConditionValue {
	return clusterkit.ConditionValue{Status: c.Status == metav1.ConditionTrue, Reason: c.Reason, Message: c.Message}
}

// apply owns obj by the cluster and converges it with server-side apply, as
// every child of a ConnectCluster is (clusterkit.ApplyChild explains the
// choice), reading past the cache since KEDA's CRDs are optional.
func (c *Converger) apply(ctx context.Context, cc *v1alpha1.ConnectCluster, obj client.Object) (*unstructured.Unstructured, error) {
	if err := controllerutil.SetControllerReference(cc, obj, c.Client.Scheme()); err != nil {
		return nil, fmt.Errorf("owning %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return clusterkit.ApplyChild(ctx, c.Client, c.reader(), cc, obj)
}

// deleteDerived deletes the ScaledObject and/or TriggerAuthentication of the
// cluster when they exist and the cluster owns them.
func (c *Converger) deleteDerived(ctx context.Context, cc *v1alpha1.ConnectCluster, t Target, scaledObject, triggerAuth bool) error {
	var objs []client.Object
	if scaledObject {
		objs = append(objs, &kedav1alpha1.ScaledObject{})
	}
	if triggerAuth {
		objs = append(objs, &kedav1alpha1.TriggerAuthentication{})
	}
	names := map[string]string{"*v1alpha1.ScaledObject": t.DeploymentName, "*v1alpha1.TriggerAuthentication": t.TriggerAuthenticationName()}
	for _, o := range objs {
		if err := c.deleteOwned(ctx, cc, o, names[fmt.Sprintf("%T", o)]); err != nil {
			return err
		}
	}
	return nil
}

// deleteOwned deletes the object of o's type named name when it exists and
// the cluster owns it.
func (c *Converger) deleteOwned(ctx context.Context, cc *v1alpha1.ConnectCluster, o client.Object, name string) error {
	key := types.NamespacedName{Namespace: cc.Namespace, Name: name}
	if err := c.reader().Get(ctx, key, o); err != nil {
		if kerrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("reading %T %s: %w", o, key, err)
	}
	if !metav1.IsControlledBy(o, cc) {
		return nil // not ours: leave it alone
	}
	if err := c.Client.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
		return fmt.Errorf("deleting %T %s: %w", o, key, err)
	}
	return nil
}
