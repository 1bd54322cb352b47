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

package workerclient

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// Resolver finds the REST endpoints of a cluster's Ready workers.
type Resolver interface {
	// Resolve returns base URLs ("http://<pod IP>:8083") of the cluster's
	// Ready worker pods, in a stable order; ErrNoWorkers when there is none.
	Resolve(ctx context.Context, cc *v1alpha1.ConnectCluster) ([]string, error)
}

// PodResolver lists the cluster's worker pods through a controller-runtime
// reader (the manager's cache) with the selector the ConnectCluster reports
// in status.selector, and keeps the Ready ones that have an IP.
type PodResolver struct {
	Reader client.Reader
}

// Resolve implements Resolver.
func (r PodResolver) Resolve(ctx context.Context, cc *v1alpha1.ConnectCluster) ([]string, error) {
	if cc.Status.Selector == "" {
		return nil, fmt.Errorf("ConnectCluster %s/%s reports no worker selector yet: %w", cc.Namespace, cc.Name, ErrNoWorkers)
	}
	sel, err := labels.Parse(cc.Status.Selector)
	if err != nil {
		return nil, fmt.Errorf("parsing status.selector %q of ConnectCluster %s/%s: %w", cc.Status.Selector, cc.Namespace, cc.Name, err)
	}
	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods, client.InNamespace(cc.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing worker pods of ConnectCluster %s/%s: %w", cc.Namespace, cc.Name, err)
	}
	urls := ReadyPodURLs(pods.Items, v1alpha1.RestPort)
	if len(urls) == 0 {
		return nil, fmt.Errorf("ConnectCluster %s/%s has %d worker pods, none Ready with an IP: %w", cc.Namespace, cc.Name, len(pods.Items), ErrNoWorkers)
	}
	return urls, nil
}

// ReadyPodURLs returns http://<IP>:<port> of the pods that are Ready, have an
// IP and are not being deleted, sorted.
func ReadyPodURLs(pods []corev1.Pod, port int32) []string {
	var urls []string
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || !podReady(p) {
			continue
		}
		urls = append(urls, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port))))
	}
	sort.Strings(urls)
	return urls
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// StaticResolver returns fixed URLs for every cluster: for tests, and for
// running the operator against workers outside the cluster.
type StaticResolver []string

// Resolve implements Resolver.
func (s StaticResolver) Resolve(context.Context, *v1alpha1.ConnectCluster) ([]string, error) {
	if len(s) == 0 {
		return nil, ErrNoWorkers
	}
	return append([]string(nil), s...), nil
}

// ResolverFunc adapts a function to Resolver (tests route each cluster to
// its own in-process workers with it).
type ResolverFunc func(ctx context.Context, cc *v1alpha1.ConnectCluster) ([]string, error)

// Resolve implements Resolver.
func (f ResolverFunc) Resolve(ctx context.Context, cc *v1alpha1.ConnectCluster) ([]string, error) {
	return f(ctx, cc)
}

// Connect resolves the cluster's workers and returns a client for them.
func Connect(ctx context.Context, r Resolver, cc *v1alpha1.ConnectCluster, opts Options) (*Client, error) {
	urls, err := r.Resolve(ctx, cc)
	if err != nil {
		return nil, err
	}
	return New(urls, opts)
}
