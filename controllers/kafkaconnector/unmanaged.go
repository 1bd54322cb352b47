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
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// viewRead is the whole-cluster read of cc's workers behind a view: first
// the KafkaConnectors of cc that the operator's cache holds as managing
// their connector, then GET /connectors?expand=status,info,limits,topics.
// In that order, a connector deleted by its KafkaConnector after the
// workers answered was still managed when the read was sent, so a view
// older than a deletion never shows it as unmanaged.
func (r *Reconciler) viewRead(cc *v1alpha1.ConnectCluster, workers *workerclient.Client) viewRead {
	return func(ctx context.Context) (map[string]connectapi.ConnectorExpansion, map[string]bool, error) {
		managed, err := r.managedConnectors(ctx, cc)
		if err != nil {
			logf.FromContext(ctx).V(1).Info("the cluster read goes on without the list of managed connectors; the unmanaged-connector scan will read again", "error", err.Error())
		}
		entries, err := workers.Expanded(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the connectors of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
		}
		return entries, managed, nil
	}
}

// managedConnectors lists, from the cache, the KafkaConnectors naming cc
// that manage their connector.
func (r *Reconciler) managedConnectors(ctx context.Context, cc *v1alpha1.ConnectCluster) (map[string]bool, error) {
	var list v1alpha1.KafkaConnectorList
	// Names and finalizers are only read: no copy of the cached objects.
	if err := r.Client.List(ctx, &list, client.InNamespace(cc.Namespace), client.MatchingFields{clusterkit.ConnectorClusterRefIndex: cc.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the KafkaConnectors of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
	}
	return managedNames(list.Items), nil
}

// managedNames are the names of the KafkaConnectors in kcs that manage
// their connector: they carry the finalizer (a KafkaConnector that found a
// connector of its name already there does not manage it).
func managedNames(kcs []v1alpha1.KafkaConnector) map[string]bool {
	managed := make(map[string]bool, len(kcs))
	for i := range kcs {
		if controllerutil.ContainsFinalizer(&kcs[i], Finalizer) {
			managed[kcs[i].Name] = true
		}
	}
	return managed
}

// UnmanagedConnectors lists the connectors on cc's workers that none of
// kcs manages. It implements connectcluster.UnmanagedScanner with
// the cluster's shared view (no REST call of its own while the connectors'
// passes keep the view young); nothing is ever deleted.
func (r *Reconciler) UnmanagedConnectors(ctx context.Context, cc *v1alpha1.ConnectCluster, kcs []v1alpha1.KafkaConnector) ([]string, error) {
	workers, err := r.workerClient(ctx, cc)
	if err != nil {
		return nil, err
	}
	names, err := r.views.unmanaged(ctx, cc, r.viewRead(cc, workers), r.viewAge(), r.now(), kcs)
	if err != nil {
		return nil, err
	}
	return r.withoutOwnInFlight(ctx, names, kcs), nil
}

// withoutOwnInFlight drops from names the connectors whose KafkaConnector
// holds the finalizer in the API server though not yet in the cache: a
// connector a pass has just created (finalizer first, then the connector)
// is not someone else's. Only names with a same-named KafkaConnector are
// read again, one GET each.
func (r *Reconciler) withoutOwnInFlight(ctx context.Context, names []string, kcs []v1alpha1.KafkaConnector) []string {
	byName := make(map[string]*v1alpha1.KafkaConnector, len(kcs))
	for i := range kcs {
		byName[kcs[i].Name] = &kcs[i]
	}
	out := names[:0]
	for _, n := range names {
		if kc := byName[n]; kc != nil && r.finalizerAdded(ctx, kc) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// ForgetCluster drops what the reconciler keeps about a ConnectCluster
// that is gone (connectcluster.UnmanagedScanner): a scan that ran while the
// cluster was being deleted may have kept a view after the KafkaConnector
// reconciler's own watch forgot it.
func (r *Reconciler) ForgetCluster(key types.NamespacedName) {
	r.forgetCluster(key.String())
}

// unmanaged lists the connectors in a view of cc (young enough for age)
// that none of kcs manages now and that none managed when the view's read
// was sent.
func (v *clusterViews) unmanaged(ctx context.Context, cc *v1alpha1.ConnectCluster, read viewRead, age viewAge, now time.Time, kcs []v1alpha1.KafkaConnector) ([]string, error) {
	cv := v.view(ctx, cc, read, 0, age, now)
	switch {
	case cv == nil:
		return nil, fmt.Errorf("waiting for the read of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, ctx.Err())
	case cv.err != nil:
		return nil, cv.err
	case cv.managed == nil:
		return nil, fmt.Errorf("the read of ConnectCluster %s/%s has no list of the connectors managed when it was sent", cc.Namespace, cc.Name)
	}
	return unmanagedIn(cv.entries, cv.managed, managedNames(kcs)), nil
}

// unmanagedIn lists the connectors of a read that no KafkaConnector
// managed, neither when the read was sent (atRead) nor now: one that was
// deleted after the read was sent may still be in it, and one created
// while the read was on its way is managed now.
func unmanagedIn(entries map[string]connectapi.ConnectorExpansion, atRead, now map[string]bool) []string {
	var out []string
	for n := range entries {
		if !atRead[n] && !now[n] {
			out = append(out, n)
		}
	}
	return out
}
