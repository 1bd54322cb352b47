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
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// EventUnmanagedConnectors is the Warning event when connectors that no
// KafkaConnector manages appear on the workers.
const EventUnmanagedConnectors = "UnmanagedConnectors"

// DefaultConnectorScanInterval is how often a cluster is looked at for
// connectors that no KafkaConnector manages. The look costs no REST call
// of its own while the cluster's KafkaConnectors keep a recent whole read
// of its workers (the KafkaConnector reconciler's views).
const DefaultConnectorScanInterval = time.Minute

// maxUnmanaged bounds status.unmanagedConnectors.
const maxUnmanaged = 100

// scanTimeout bounds one scan, so that unreachable workers do not hold a
// reconcile up.
const scanTimeout = 5 * time.Second

// UnmanagedScanner lists the connectors on cc's workers that none of kcs
// (the KafkaConnectors naming cc) manages. The KafkaConnector reconciler
// implements it: it holds the worker clients and the cluster's latest
// read, and knows what "manages" means (its finalizer).
type UnmanagedScanner interface {
	UnmanagedConnectors(ctx context.Context, cc *v1alpha1.ConnectCluster, kcs []v1alpha1.KafkaConnector) ([]string, error)
	// ForgetCluster drops what a scan kept about a ConnectCluster that is
	// gone. The ConnectCluster reconciler calls it when it finds the
	// cluster gone: after any scan of it, which the same reconciler ran.
	ForgetCluster(key types.NamespacedName)
}

func (r *Reconciler) scanInterval() time.Duration {
	if r.opts.ConnectorScanInterval > 0 {
		return r.opts.ConnectorScanInterval
	}
	return DefaultConnectorScanInterval
}

// scanUnmanaged records in st the connectors on the workers that no
// KafkaConnector manages. Workers that cannot be reached leave the recorded
// list as it was. Nothing is ever deleted.
func (r *Reconciler) scanUnmanaged(ctx context.Context, cc *v1alpha1.ConnectCluster, st *loopState) {
	if r.opts.UnmanagedConnectors == nil || st.conflict != nil || st.deployment == nil {
		return
	}
	kcs, err := clusterConnectors(ctx, r.client, cc)
	if err != nil {
		logf.FromContext(ctx).V(1).Info("listing KafkaConnectors for the unmanaged-connector scan failed", "error", err.Error())
		return
	}
	sctx, cancel := context.WithTimeout(ctx, scanTimeout)
	defer cancel()
	names, err := r.opts.UnmanagedConnectors.UnmanagedConnectors(sctx, cc, kcs)
	if err != nil {
		logf.FromContext(ctx).V(1).Info("listing the connectors on the workers failed; status.unmanagedConnectors keeps its value", "error", err.Error())
		return
	}
	slices.Sort(names)
	if len(names) > maxUnmanaged {
		names = names[:maxUnmanaged]
	}
	if len(names) == 0 {
		names = nil
	}
	st.unmanaged = &names
}

// emitUnmanagedEvents warns when connectors no KafkaConnector manages
// appear on the workers.
func (r *Reconciler) emitUnmanagedEvents(cc *v1alpha1.ConnectCluster, s *v1alpha1.ConnectClusterStatus) {
	var added []string
	for _, n := range s.UnmanagedConnectors {
		if !slices.Contains(cc.Status.UnmanagedConnectors, n) {
			added = append(added, n)
		}
	}
	if len(added) > 0 {
		r.recorder.Eventf(cc, nil, corev1.EventTypeWarning, EventUnmanagedConnectors, "Scan",
			"connector(s) %s run on the workers but no KafkaConnector manages them; the operator leaves them alone (delete them through the REST API, or adopt one by deleting it and creating a KafkaConnector of that name)",
			namesForEvent(added))
	}
}

// eventNames is how many connector names an event lists: the API server
// refuses an event message over 1024 characters.
const eventNames = 10

// namesForEvent lists up to eventNames names, then how many more there
// are and where they all are.
func namesForEvent(names []string) string {
	if len(names) <= eventNames {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more (status.unmanagedConnectors lists them)", strings.Join(names[:eventNames], ", "), len(names)-eventNames)
}
