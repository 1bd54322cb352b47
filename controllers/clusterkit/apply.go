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

package clusterkit

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
)

// ApplyChild converges one child of cc with server-side apply as the
// operator's field manager, and returns the object the API server stored
// (with its status). Every derived object goes this way, KEDA's too: the
// operator owns exactly the fields its builders set, so fields another
// manager sets (an HPA's replicas, KEDA's own annotations, a GitOps tool's
// labels) are left alone, a field the builder stops setting is removed, and
// there is no read-modify-write race. It refuses to take over an object of
// the same name that the cluster does not control (a user's own Deployment
// "<cluster>-connect", say); reader reads that object (a cache, or the API
// server for kinds the operator does not watch).
func ApplyChild(ctx context.Context, cl client.Client, reader client.Reader, cc *v1alpha1.ConnectCluster, o client.Object) (*unstructured.Unstructured, error) {
	var memo *ApplyMemo
	return memo.Apply(ctx, cl, reader, cc, o)
}

// Apply is ApplyChild that sends nothing when the memo says the same apply
// already left the object as it is; it answers nil then.
func (m *ApplyMemo) Apply(ctx context.Context, cl client.Client, reader client.Reader, cc *v1alpha1.ConnectCluster, o client.Object) (*unstructured.Unstructured, error) {
	u, err := ApplyForm(o)
	if err != nil {
		return nil, err
	}
	kind, key, sum := u.GetKind(), childKey(u), applySum(u)
	// A fresh, empty object: decoding into a copy of o would keep o's owner
	// references when the stored object has none.
	existing, ok := reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s %s is not a client.Object", kind, o.GetName())
	}
	if eu, isU := existing.(*unstructured.Unstructured); isU {
		// Kinds of optional CRDs (the PodMonitor) are built unstructured.
		eu.SetGroupVersionKind(u.GroupVersionKind())
	}
	switch err := reader.Get(ctx, client.ObjectKeyFromObject(o), existing); {
	case err == nil && !metav1.IsControlledBy(existing, cc):
		return nil, fmt.Errorf("%s %s already exists and is not managed by this ConnectCluster: rename or delete it", kind, o.GetName())
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading %s %s: %w", kind, o.GetName(), err)
	case err == nil && m.unchanged(key, sum, existing):
		return nil, nil // the same apply onto the object it left: nothing to write
	}
	if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("applying %s %s: %w", kind, o.GetName(), err)
	}
	m.record(cc.Namespace+"/"+cc.Name, key, sum, u.GetResourceVersion())
	return u, nil
}

// ApplyForm turns a built object into what the operator sends with
// server-side apply: its fields as unstructured content, without status and
// without the zero creationTimestamp, so the operator's field manager owns
// exactly the fields the builder set.
func ApplyForm(o client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, fmt.Errorf("converting %T %s to unstructured: %w", o, o.GetName(), err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// ApplyMemo remembers, per child, the last apply sent and the
// resourceVersion the API server answered with. A reconcile pass that would
// send the same apply onto an object still at that resourceVersion (nobody
// changed it since) sends nothing: at rest, and while a cluster's
// connectors change its totals, the children are not re-applied on every
// pass. Any change to the object (a user's edit, a deletion and re-creation)
// changes its resourceVersion, and the apply is sent again. A child's entry
// goes when the operator deletes the child (Drop) or its cluster is gone
// (Forget). Its zero value is empty; a nil memo remembers nothing.
type ApplyMemo struct{ m sync.Map } // kind/namespace/name -> appliedChild
type appliedChild struct {
	owner           string // namespace/name of the ConnectCluster
	sum             [sha256.Size]byte
	resourceVersion string
}

func childKey(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

func applySum(u *unstructured.Unstructured) [sha256.Size]byte {
	b, err := json.Marshal(u.Object) // sorted keys: the same object, the same sum
	if err != nil {
		return [sha256.Size]byte{} // never equal to a recorded sum of real content
	}
	return sha256.Sum256(b)
}

// unchanged says sum is the apply last sent for child key and live is still
// at the resourceVersion that apply left (nil memo: never).
func (m *ApplyMemo) unchanged(key string, sum [sha256.Size]byte, live client.Object) bool {
	if m == nil {
		return false
	}
	v, ok := m.m.Load(key)
	if !ok {
		return false
	}
	a := v.(appliedChild)
	return sum == a.sum && live.GetResourceVersion() != "" && live.GetResourceVersion() == a.resourceVersion
}

// record remembers an apply of owner's child (its sum) and the
// resourceVersion the API server answered with.
func (m *ApplyMemo) record(owner, key string, sum [sha256.Size]byte, resourceVersion string) {
	if m != nil {
		m.m.Store(key, appliedChild{owner: owner, sum: sum, resourceVersion: resourceVersion})
	}
}

// Drop forgets one child (kind/namespace/name).
func (m *ApplyMemo) Drop(key string) { m.m.Delete(key) }

// Forget drops every child of owner (namespace/name of its ConnectCluster).
func (m *ApplyMemo) Forget(owner string) {
	m.m.Range(func(k, v any) bool {
		if v.(appliedChild).owner == owner {
			m.m.Delete(k)
		}
		return true
	})
}

// Len is the number of children remembered.
func (m *ApplyMemo) Len() int { return statusmetrics.SyncMapLen(&m.m) }
