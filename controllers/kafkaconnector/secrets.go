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
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// SecretsHash digests the values of exactly the referenced Secret keys
// (secrets maps a Secret name to its data). It changes when a referenced
// value changes, appears or disappears, and not when an unreferenced key or
// another Secret changes, so rotating a Secret restarts only the connectors
// that use it. The empty string means "no references". The values
// themselves only enter a SHA-256.
func SecretsHash(refs []clusterkit.SecretRef, secrets map[string]map[string][]byte) string {
	if len(refs) == 0 {
		return ""
	}
	h := sha256.New()
	for _, r := range refs {
		fmt.Fprintf(h, "%d:%s\x00%d:%s\x00", len(r.Name), r.Name, len(r.Key), r.Key)
		data, ok := secrets[r.Name]
		var v []byte
		if ok {
			v, ok = data[r.Key]
		}
		if !ok {
			h.Write([]byte{0})
			continue
		}
		sum := sha256.Sum256(v)
		h.Write([]byte{1})
		h.Write(sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// SecretRotated says whether the connector must restart because a
// referenced Secret value changed: only when a previous hash was recorded
// (a first observation is not a rotation) and it differs. A connector that
// dropped its references needs no restart for it: the config change that
// dropped them is written, and the worker restarts the connector on it.
func SecretRotated(recorded, current string) bool {
	return recorded != "" && current != "" && recorded != current
}

// SecretRefIndex indexes KafkaConnectors by the names of the Secrets their
// config references, so a Secret change finds its connectors.
const SecretRefIndex = "spec.config.secretRefs"

// SecretNamesOf is the SecretRefIndex function.
func SecretNamesOf(o client.Object) []string {
	kc, ok := o.(*v1alpha1.KafkaConnector)
	if !ok {
		return nil
	}
	return clusterkit.ConnectorSecretNames(*kc)
}

// ConnectorsUsingSecret maps a Secret to requests for the KafkaConnectors
// of its namespace that reference it (through SecretRefIndex), for a watch
// on Secrets: a rotation then reaches exactly those connectors.
func ConnectorsUsingSecret(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1alpha1.KafkaConnectorList
		if err := c.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{SecretRefIndex: o.GetName()}); err != nil {
			logf.FromContext(ctx).Error(err, "listing the connectors that reference a Secret", "secret", client.ObjectKeyFromObject(o))
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, kc := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}})
		}
		return reqs
	}
}
