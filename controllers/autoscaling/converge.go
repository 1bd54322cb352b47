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

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
)

// Converger keeps a cluster's derived ScaledObject and TriggerAuthentication
// as the builders say. It implements connectcluster.Autoscaler: the
// ConnectCluster reconciler calls it once per loop and writes the
// conditions it returns (one status writer).
type Converger struct {
	// Client must have KEDA's types in its scheme (kedav1alpha1.AddToScheme).
	Client client.Client
	// APIReader reads KEDA's objects straight from the API server (the
	// manager's GetAPIReader), so no informer is started on CRDs that may
	// not exist; nil reads through Client.
	APIReader client.Reader
	// KEDA says whether KEDA is installed (re-checked periodically).
	KEDA interface{ Served() bool }
}

func (c *Converger) reader() client.Reader {
	if c.APIReader != nil {
		return c.APIReader
	}
	return c.Client
}

var _ connectcluster.Autoscaler = (*Converger)(nil)

// derivedLabels are the labels of the derived objects: the cluster's
// common child labels.
func derivedLabels(cc *v1alpha1.ConnectCluster) map[string]string {
	return connectcluster.CommonLabels(cc)
}

// ReconcileAutoscaling implements connectcluster.Autoscaler.
func (c *Converger) ReconcileAutoscaling(ctx context.Context, cc *v1alpha1.ConnectCluster, totals connectcluster.Totals, deploymentName string) (connectcluster.AutoscalingResult, error) {
	t := Target{DeploymentName: deploymentName, Labels: derivedLabels(cc)}
	served := c.KEDA != nil && c.KEDA.Served()
	result := func(cond metav1.Condition, active bool, d *Decision) connectcluster.AutoscalingResult {
		r := connectcluster.AutoscalingResult{Active: active, Autoscaling: value(cond)}
		if d != nil {
			r.CapacityRaised = value(d.Condition(cc.Generation))
		}
		return r
	}
	if !cc.AutoscalingEnabled() || !served {
		if served {
			if err := c.deleteDerived(ctx, cc, t, true, true); err != nil {
				return connectcluster.AutoscalingResult{}, err
			}
		}
		return result(AutoscalingCondition(ConditionInput{Enabled: cc.AutoscalingEnabled(), KEDAServed: served}, cc.Generation), false, nil), nil
	}

	var list v1alpha1.KafkaConnectorList
	if err := c.Client.List(ctx, &list, client.InNamespace(cc.Namespace), client.MatchingFields{connectcluster.ConnectorClusterRefIndex: cc.Name}); err != nil {
		return connectcluster.AutoscalingResult{}, fmt.Errorf("listing the connectors of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
	}
	connectors := ConnectorsFrom(list.Items)
	so, d := BuildScaledObject(cc, connectors, Totals{EffectiveTasks: totals.Tasks}, t)
	ta := BuildTriggerAuthentication(cc, t)

	if ta != nil && so != nil {
		if err := c.apply(ctx, cc, ta, func(existing client.Object) { existing.(*kedav1alpha1.TriggerAuthentication).Spec = ta.Spec }); err != nil {
			return connectcluster.AutoscalingResult{}, err
		}
	} else if err := c.deleteDerived(ctx, cc, t, false, true); err != nil {
		return connectcluster.AutoscalingResult{}, err
	}
	if so == nil {
		if err := c.deleteDerived(ctx, cc, t, true, false); err != nil {
			return connectcluster.AutoscalingResult{}, err
		}
		return result(AutoscalingCondition(ConditionInput{Enabled: true, KEDAServed: true}, cc.Generation), false, &d), nil
	}
	if err := c.apply(ctx, cc, so, func(existing client.Object) { existing.(*kedav1alpha1.ScaledObject).Spec = so.Spec }); err != nil {
		return connectcluster.AutoscalingResult{}, err
	}
	cond := AutoscalingCondition(ConditionInput{Enabled: true, KEDAServed: true, Triggers: len(so.Spec.Triggers), ScaledObjectReady: ScaledObjectReadyCondition(so)}, cc.Generation)
	return result(cond, true, &d), nil
}

func value(c metav1.Condition) connectcluster.ConditionValue {
	return connectcluster.ConditionValue{Status: c.Status == metav1.ConditionTrue, Reason: c.Reason, Message: c.Message}
}

// apply creates obj or patches the existing object's spec, labels and owner
// reference when they differ (no write otherwise); obj is left holding the
// stored object, with KEDA's status.
func (c *Converger) apply(ctx context.Context, cc *v1alpha1.ConnectCluster, obj client.Object, setSpec func(existing client.Object)) error {
	kind := fmt.Sprintf("%T", obj)
	existing := obj.DeepCopyObject().(client.Object)
	err := c.reader().Get(ctx, client.ObjectKeyFromObject(obj), existing)
	if kerrors.IsNotFound(err) {
		if err := controllerutil.SetControllerReference(cc, obj, c.Client.Scheme()); err != nil {
			return fmt.Errorf("owning %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
		if err := c.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	before := existing.DeepCopyObject().(client.Object)
	setSpec(existing)
	labels := existing.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range obj.GetLabels() {
		labels[k] = v
	}
	existing.SetLabels(labels)
	if err := controllerutil.SetControllerReference(cc, existing, c.Client.Scheme()); err != nil {
		return fmt.Errorf("owning %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if !equality.Semantic.DeepEqual(before, existing) {
		if err := c.Client.Patch(ctx, existing, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("patching %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	// Hand the stored object (with its status) back to the caller.
	return copyInto(existing, obj)
}

func copyInto(from, to client.Object) error {
	switch t := to.(type) {
	case *kedav1alpha1.ScaledObject:
		*t = *from.(*kedav1alpha1.ScaledObject)
	case *kedav1alpha1.TriggerAuthentication:
		*t = *from.(*kedav1alpha1.TriggerAuthentication)
	default:
		return fmt.Errorf("unexpected derived type %T", to)
	}
	return nil
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
		key := types.NamespacedName{Namespace: cc.Namespace, Name: names[fmt.Sprintf("%T", o)]}
		if err := c.reader().Get(ctx, key, o); err != nil {
			if kerrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				continue
			}
			return fmt.Errorf("reading %T %s: %w", o, key, err)
		}
		if !metav1.IsControlledBy(o, cc) {
			continue // not ours: leave it alone
		}
		if err := c.Client.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
			return fmt.Errorf("deleting %T %s: %w", o, key, err)
		}
	}
	return nil
}
