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
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// keptTokens keeps each ConnectCluster's REST token with the
// resourceVersion of the Secret it was read from. Every pass needs the
// token; reading the Secret each time cost one API GET per connector per
// resync at rest (355 a minute at 250 connectors, docs/benchmarks.md). The
// operator watches Secrets' metadata anyway (a rotated Secret restarts the
// connectors that use it), so a pass compares the kept resourceVersion with
// the watched one, from memory, and reads the Secret again only when it
// changed. The value stays out of every cache but this one entry per
// cluster; a cluster's entry goes with the cluster (forgetCluster).
type keptTokens struct {
	mu sync.Mutex
	m  map[string]keptToken // namespace/name of the ConnectCluster
}

type keptToken struct {
	secret          types.NamespacedName
	key             string
	resourceVersion string
	value           string
}

func (t *keptTokens) get(cluster string) (keptToken, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[cluster]
	return v, ok
}

func (t *keptTokens) put(cluster string, v keptToken) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]keptToken{}
	}
	t.m[cluster] = v
}

func (t *keptTokens) forget(cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, cluster)
}

func (t *keptTokens) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// restToken returns the REST token of cc from its Secret: the kept value
// while the watched metadata shows the Secret unchanged, else read afresh.
func (r *Reconciler) restToken(ctx context.Context, cc *v1alpha1.ConnectCluster) (string, error) {
	ref := cc.RestTokenSecret()
	cluster := cc.Namespace + "/" + cc.Name
	name := types.NamespacedName{Namespace: cc.Namespace, Name: ref.Name}
	if r.SecretMetadata != nil {
		md := &metav1.PartialObjectMetadata{}
		md.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := r.SecretMetadata.Get(ctx, name, md); err == nil {
			if kept, ok := r.tokens.get(cluster); ok && kept.secret == name && kept.key == ref.Key && kept.resourceVersion == md.ResourceVersion {
				return kept.value, nil
			}
		}
	}
	var s corev1.Secret
	if err := r.apiReader().Get(ctx, name, &s); err != nil {
		r.tokens.forget(cluster)
		return "", fmt.Errorf("reading the REST token Secret %s/%s: %w", cc.Namespace, ref.Name, err)
	}
	tok, ok := s.Data[ref.Key]
	if !ok || len(tok) == 0 {
		r.tokens.forget(cluster)
		return "", fmt.Errorf("REST token Secret %s/%s has no key %q", cc.Namespace, ref.Name, ref.Key)
	}
	value := strings.TrimSpace(string(tok)) // the workers trim the file too
	r.tokens.put(cluster, keptToken{secret: name, key: ref.Key, resourceVersion: s.ResourceVersion, value: value})
	// A pass that read cc before the cluster was deleted can get here after
	// forgetCluster ran, and would keep the entry for good. The informer's
	// cache is updated before its delete event is handled, so a cluster
	// that is not in it now has been forgotten already or will be: the
	// entry goes either way.
	if !r.clusterCached(ctx, cc) {
		r.tokens.forget(cluster)
	}
	return value, nil
}

// clusterCached says whether cc (the same object, by UID) is in the
// reconciler's cache.
func (r *Reconciler) clusterCached(ctx context.Context, cc *v1alpha1.ConnectCluster) bool {
	var now v1alpha1.ConnectCluster
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: cc.Namespace, Name: cc.Name}, &now)
	return err == nil && now.UID == cc.UID
}
