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

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
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

// Setup registers every reconciler with the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	// The field indexes are shared by the reconcilers: register them once.
	if err := connectcluster.SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	ccOpts := opts.ConnectCluster
	ccOpts.WorkerImage = opts.WorkerImage
	ccOpts.OperatorNamespace = opts.OperatorNamespace
	if err := connectcluster.NewReconciler(mgr, ccOpts).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ConnectCluster reconciler: %w", err)
	}
	return nil
}
