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
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/group"
)

// EventMembersRemoved is the event reason when the operator removed the
// static group members of worker pods that are gone for good.
const EventMembersRemoved = "GroupMembersRemoved"

// departedRecheck is how often a cluster's groups are checked for the
// members of deleted pods when its pods did not change.
const departedRecheck = 5 * time.Minute

// departedCheck is the last successful check of a cluster's groups: the
// pods it saw (sorted names) and when.
type departedCheck struct {
	pods string
	at   time.Time
}

// removeDeparted removes, from the worker group and the sink groups of the
// cluster's connectors, the static members whose pod no longer exists
// (deleted, scaled down, replaced under a new name). A worker's instance id
// is its pod name; a sink task consumer's is the pod name, the connector
// and the task (connectnames.SinkInstanceID). Such a member would hold
// every rebalance of its group until its session expires, or, on kfake,
// for as long as the coordinator keeps it (runtime/group depart.go).
// A terminating pod still counts as present: its worker leaves by itself.
func (r *Reconciler) removeDeparted(ctx context.Context, cc *v1alpha1.ConnectCluster, conn clusterkit.KafkaConnection, kcs []v1alpha1.KafkaConnector) (map[string][]string, error) {
	// Only when the pods changed (read from the cache, free), and every
	// departedRecheck anyway: the Kafka calls and the uncached pod list
	// stay off the idle loop.
	var cached corev1.PodList
	if err := r.client.List(ctx, &cached, client.InNamespace(cc.Namespace), client.MatchingLabels(clusterkit.SelectorLabels(cc))); err != nil {
		return nil, fmt.Errorf("listing the worker pods: %w", err)
	}
	names := make([]string, 0, len(cached.Items))
	for _, p := range cached.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	fingerprint := strings.Join(names, ",")
	key := types.NamespacedName{Namespace: cc.Namespace, Name: cc.Name}
	now := r.opts.Clock.Now()
	r.mu.Lock()
	last, ok := r.departed[key]
	if ok && last.pods == fingerprint && now.Sub(last.at) < departedRecheck {
		r.mu.Unlock()
		return nil, nil
	}
	r.mu.Unlock()

	groups := map[string]group.Owner{cc.GroupID(): group.WorkerItself}
	for i := range kcs {
		name := kcs[i].Name
		groups[connectnames.SinkGroup(name)] = func(id string) string { return connectnames.SinkInstanceWorker(name, id) }
	}
	// The pods are read past the cache, after the groups were described:
	// a pod whose worker joined is in the answer.
	pods := func(ctx context.Context) (map[string]bool, error) {
		var list corev1.PodList
		if err := r.apiReader.List(ctx, &list, client.InNamespace(cc.Namespace), client.MatchingLabels(clusterkit.SelectorLabels(cc))); err != nil {
			return nil, fmt.Errorf("listing the worker pods: %w", err)
		}
		out := make(map[string]bool, len(list.Items))
		for _, p := range list.Items {
			out[p.Name] = true
		}
		return out, nil
	}
	cl, err := kgo.NewClient(clusterkit.KgoOptions(conn)...)
	if err != nil {
		return nil, fmt.Errorf("creating a Kafka client for %v: %w", conn.BootstrapServers, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, r.opts.KafkaTimeout)
	defer cancel()
	removed, err := group.RemoveDeparted(ctx, kadm.NewClient(cl), groups, pods, "worker pod "+cc.Namespace+"/"+cc.Name+" is gone (removed by conveyor-operator)")
	if err == nil {
		r.mu.Lock()
		r.departed[key] = departedCheck{pods: fingerprint, at: now}
		r.mu.Unlock()
	}
	if len(removed) > 0 {
		logf.FromContext(ctx).Info("removed the group members of deleted worker pods", "removed", removed)
	}
	return removed, err
}
