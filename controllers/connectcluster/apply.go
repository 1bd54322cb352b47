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
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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

// applyMemo remembers, per child, the last apply sent and the
// resourceVersion the API server answered with. A reconcile pass that would
// send the same apply onto an object still at that resourceVersion (nobody
// changed it since) sends nothing: at rest, and while a cluster's
// connectors change its totals, the children are not re-applied on every
// pass. Any change to the object (a user's edit, a deletion and re-creation)
// changes its resourceVersion, and the apply is sent again. A child's entry
// goes when the operator deletes the child (drop) or its cluster is gone
// (forget).
type applyMemo struct{ m sync.Map } // kind/namespace/name -> appliedChild

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
func (m *applyMemo) unchanged(key string, sum [sha256.Size]byte, live client.Object) bool {
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
func (m *applyMemo) record(owner, key string, sum [sha256.Size]byte, resourceVersion string) {
	if m != nil {
		m.m.Store(key, appliedChild{owner: owner, sum: sum, resourceVersion: resourceVersion})
	}
}

// drop forgets one child.
func (m *applyMemo) drop(key string) { m.m.Delete(key) }

// forget drops every child of owner.
func (m *applyMemo) forget(owner string) {
	m.m.Range(func(k, v any) bool {
		if v.(appliedChild).owner == owner {
			m.m.Delete(k)
		}
		return true
	})
}
