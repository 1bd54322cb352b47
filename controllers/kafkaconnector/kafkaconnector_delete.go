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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// reconcileDelete removes the connector from the runtime, then the
// finalizer. Only a connector this KafkaConnector manages (finalizer
// present) is deleted. When the ConnectCluster is gone or going, its
// workers go with it and there is nothing to clean up.
func (r *Reconciler) reconcileDelete(ctx context.Context, kc *v1alpha1.KafkaConnector) (ctrl.Result, error) {
	r.lastSent.Delete(kc.Namespace + "/" + kc.Name)
	if !controllerutil.ContainsFinalizer(kc, Finalizer) {
		return ctrl.Result{}, nil
	}
	cc, err := r.cluster(ctx, kc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cc != nil && cc.DeletionTimestamp.IsZero() {
		wc, err := r.workerClient(ctx, cc)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting connector %q: %w (the finalizer %s stays until the workers answer; remove it by hand to give up)", kc.Name, err, Finalizer)
		}
		err = wc.DeleteConnector(ctx, kc.Name)
		// A KafkaConnector of the same name created next must not see
		// this one in a cluster view read before the delete.
		r.views.markActed(kc.Namespace + "/" + kc.Name)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting connector %q from ConnectCluster %s: %w", kc.Name, cc.Name, err)
		}
		r.event(kc, corev1.EventTypeNormal, "Deleted", "Delete", "deleted connector %s from ConnectCluster %s", kc.Name, cc.Name)
	}
	patch := client.MergeFrom(kc.DeepCopy())
	controllerutil.RemoveFinalizer(kc, Finalizer)
	if err := r.Client.Patch(ctx, kc, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer %s: %w", Finalizer, err))
	}
	return ctrl.Result{}, nil
}
