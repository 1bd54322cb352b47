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

// Package controllers wires Conveyor's reconcilers into a controller-runtime manager.
package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/controllers/kafkaconnector"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
)

// Options configures the reconcilers.
type Options struct {
	// WorkerImage is the image worker pods run when a ConnectCluster names none:
	// the operator's own image, since one image carries both binaries.
	WorkerImage string
	// OperatorNamespace is where the operator runs; worker NetworkPolicies admit
	// REST traffic from it.
	OperatorNamespace string
	// ConnectCluster tunes the ConnectCluster reconciler (tests shorten its
	// timeouts); WorkerImage and OperatorNamespace above take precedence.
	ConnectCluster connectcluster.Options
	// KEDACheckInterval is how often discovery is asked whether KEDA (and
	// the PodMonitor CRD) is installed (default 30s); a CRD installed later
	// is picked up without a restart.
	KEDACheckInterval time.Duration
	// WorkerResolver finds a cluster's Ready workers for the KafkaConnector
	// reconciler (default: workerclient.PodResolver over the manager's
	// cache); tests point it at in-process workers.
	WorkerResolver workerclient.Resolver
	// WorkerClient configures the worker REST clients (tests inject an
	// HTTPClient to count requests); the token is filled per cluster.
	WorkerClient workerclient.Options
	// ConnectorResync is how often a connector's runtime status is read
	// again when nothing in the API server changed (default
	// kafkaconnector.DefaultResync, 30s; conveyor operator --connector-resync).
	ConnectorResync time.Duration
	// ConnectorResyncMax is how far the reads of a cluster whose workers
	// answer the same, read after read, are spread out (default
	// kafkaconnector.DefaultResyncStretch x ConnectorResync, 2m;
	// --connector-resync-max).
	ConnectorResyncMax time.Duration
	// DriftBackoff is the revert schedule of driftPolicy enforce (default
	// kafkaconnector.DefaultDriftBackoff); tests shorten it.
	DriftBackoff kafkaconnector.Backoff
}

// CacheOptions limits what the manager watches to the given namespaces
// (conveyor operator --watch-namespaces); none means every namespace. The
// reconcilers only read through this cache, so objects elsewhere are never
// reconciled; group conflicts are detected among the watched namespaces.
func CacheOptions(watchNamespaces []string) cache.Options {
	opts := cache.Options{}
	if len(watchNamespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, n := range watchNamespaces {
			opts.DefaultNamespaces[n] = cache.Config{}
		}
	}
	return opts
}

// wakeBuffer bounds the queue of clusters woken by a KEDA change; clusters
// beyond it wait for their periodic reconcile.
const wakeBuffer = 1024

// wakeClusters sends every ConnectCluster that uses an optional CRD (uses
// says which) to wake when the CRD appears or goes. At the first check the
// cache may not have started yet: the clusters are reconciled at start
// anyway, so nothing is lost.
func wakeClusters(cl client.Client, wake chan<- event.GenericEvent, served bool, uses func(*v1alpha1.ConnectCluster) bool, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var list v1alpha1.ConnectClusterList
	if err := cl.List(ctx, &list); err != nil {
		log.V(1).Info("listing ConnectClusters after a CRD change failed; they catch up at their periodic reconcile", "installed", served, "error", err.Error())
		return
	}
	for i := range list.Items {
		if !uses(&list.Items[i]) {
			continue
		}
		select {
		case wake <- event.GenericEvent{Object: &list.Items[i]}:
		default:
			log.Info("too many ConnectClusters to wake after a CRD change; the rest catch up at their periodic reconcile", "installed", served)
			return
		}
	}
	log.Info("CRD availability changed", "installed", served)
}

// podMonitorServed is the discovery probe of the PodMonitor CRD, the same
// check as KEDA's.
func podMonitorServed(dc discovery.ServerResourcesInterface) (bool, error) {
	return autoscaling.ResourcesServed(dc, connectcluster.PodMonitorGVK.GroupVersion().String(), connectcluster.PodMonitorResource)
}

// Setup registers every reconciler with the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	// The field indexes are shared by the reconcilers: register them once.
	if err := clusterkit.SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	ccOpts := opts.ConnectCluster
	ccOpts.WorkerImage = opts.WorkerImage
	ccOpts.OperatorNamespace = opts.OperatorNamespace
	// Optional CRDs (KEDA's, the PodMonitor) may be missing: their checkers
	// only ask discovery, and their objects are read through the API reader
	// (no informer on a CRD that may not exist). A CRD appearing or going
	// wakes the clusters that use it.
	var dc *discovery.DiscoveryClient
	var wake chan event.GenericEvent
	cl := mgr.GetClient()
	interval := opts.KEDACheckInterval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	if ccOpts.Autoscaler == nil || ccOpts.PodMonitors == nil {
		var err error
		if dc, err = discovery.NewDiscoveryClientForConfig(mgr.GetConfig()); err != nil {
			return fmt.Errorf("creating the discovery client for the optional CRD checks: %w", err)
		}
		wake = make(chan event.GenericEvent, wakeBuffer)
		ccOpts.Wake = wake
	}
	if ccOpts.PodMonitors == nil {
		log := mgr.GetLogger().WithName("podmonitor")
		checker := &autoscaling.KEDAChecker{Discovery: dc, Probe: podMonitorServed, Interval: interval, OnChange: func(served bool) {
			wakeClusters(cl, wake, served, (*v1alpha1.ConnectCluster).PodMonitorEnabled, log)
		}}
		if err := mgr.Add(checker); err != nil {
			return fmt.Errorf("adding the PodMonitor CRD checker: %w", err)
		}
		ccOpts.PodMonitors = checker
	}
	if ccOpts.Autoscaler == nil {
		log := mgr.GetLogger().WithName("keda")
		checker := &autoscaling.KEDAChecker{Discovery: dc, OpenAPI: dc.OpenAPIV3(), Interval: interval, OnChange: func(served bool) {
			wakeClusters(cl, wake, served, (*v1alpha1.ConnectCluster).AutoscalingEnabled, log)
		}}
		if err := mgr.Add(checker); err != nil {
			return fmt.Errorf("adding the KEDA checker: %w", err)
		}
		kr := kafkaconnector.KafkaReads{Reader: mgr.GetAPIReader()}
		ccOpts.Autoscaler = &autoscaling.Converger{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), KEDA: checker, Topics: kr.ListTopics}
	}
	resolver := opts.WorkerResolver
	if resolver == nil {
		resolver = workerclient.PodResolver{Reader: mgr.GetClient()}
	}
	kr := kafkaconnector.KafkaReads{Reader: mgr.GetAPIReader()}
	kcr := &kafkaconnector.Reconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		SecretMetadata: mgr.GetCache(),
		Resync:         opts.ConnectorResync,
		ResyncMax:      opts.ConnectorResyncMax,
		Recorder:       mgr.GetEventRecorder("kafkaconnector"),
		Resolver:       resolver,
		ClientOptions:  opts.WorkerClient,
		Partitions:     kr.Partitions,
		Lag:            kr.Lag,
		DriftBackoff:   opts.DriftBackoff,
	}
	if ccOpts.UnmanagedConnectors == nil {
		ccOpts.UnmanagedConnectors = kcr
	}
	if err := connectcluster.NewReconciler(mgr, ccOpts).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ConnectCluster reconciler: %w", err)
	}
	if err := kcr.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the KafkaConnector reconciler: %w", err)
	}
	return nil
}
