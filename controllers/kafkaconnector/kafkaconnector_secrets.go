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
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// rotateSecrets records the digest of the referenced Secret values and,
// when it changed since the last pass (a rotation), restarts the connector
// and all its tasks so they resolve the new values. A connector created or
// given a new config this pass already starts with the current values, and
// a stopped one resolves them when it starts again: both only record the
// digest.
func (r *Reconciler) rotateSecrets(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	hash, err := r.secretsHash(ctx, kc.Namespace, l.refs)
	if err != nil {
		// Unknown is not a rotation: keep the recorded digest, look again
		// at the next pass.
		logf.FromContext(ctx).Info("reading the Secrets the connector references failed", "error", err.Error())
		return nil
	}
	fresh := l.created || l.configKeys != nil
	if !fresh && kc.TargetState() != TargetStopped && SecretRotated(kc.Status.SecretsHash, hash) && r.rotatedLive(ctx, kc, hash) {
		if _, err := l.workers.Restart(ctx, kc.Name, true, false); err != nil {
			return fmt.Errorf("restarting connector %q after a change of the Secrets it references: %w", kc.Name, err)
		}
		l.restarts = append(l.restarts, sentRestart{kind: restartSecrets, at: r.now()})
	}
	l.secretsHash = &hash
	return nil
}

// rotatedLive confirms a rotation against the KafkaConnector as the API
// server has it (see live). A failed read keeps the cached answer.
func (r *Reconciler) rotatedLive(ctx context.Context, kc *v1alpha1.KafkaConnector, hash string) bool {
	if live := r.live(ctx, kc); live != nil {
		return SecretRotated(live.Status.SecretsHash, hash)
	}
	return true
}

// live reads kc from the API server, or returns nil when that fails. The
// cached object can lag this reconciler's own last status write (a pass
// queued by another event while that write was in flight); a one-shot
// action (a rotation restart, a restart annotation) decided on the stale
// status would run twice, so such actions are confirmed on the live object.
func (r *Reconciler) live(ctx context.Context, kc *v1alpha1.KafkaConnector) *v1alpha1.KafkaConnector {
	var live v1alpha1.KafkaConnector
	if err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}, &live); err != nil {
		return nil
	}
	return &live
}

// secretsHash reads the referenced Secrets (a missing one counts as absent)
// and digests the referenced keys (SecretsHash).
func (r *Reconciler) secretsHash(ctx context.Context, namespace string, refs []clusterkit.SecretRef) (string, error) {
	if len(refs) == 0 {
		return "", nil
	}
	data := map[string]map[string][]byte{}
	for _, name := range clusterkit.SecretNames(refs) {
		var s corev1.Secret
		err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return "", fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
		}
		data[name] = s.Data
	}
	return SecretsHash(refs, data), nil
}

// secretsGrantRetry is how soon a connector waiting for the workers' Role
// looks again (the ConnectCluster reconciler updates the Role within moments).
const secretsGrantRetry = time.Second

// ungrantedSecrets returns the referenced Secrets that the workers' Role of
// cc (connectcluster.BuildSecretsRole, applied by the ConnectCluster
// reconciler) does not let them read yet.
func (r *Reconciler) ungrantedSecrets(ctx context.Context, cc *v1alpha1.ConnectCluster, refs []clusterkit.SecretRef) ([]string, error) {
	names := clusterkit.SecretNames(refs)
	if len(names) == 0 {
		return nil, nil
	}
	var role rbacv1.Role
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: cc.Namespace, Name: clusterkit.SecretsRoleName(cc)}, &role)
	switch {
	case apierrors.IsNotFound(err):
		return names, nil
	case err != nil:
		return nil, fmt.Errorf("reading the workers' Role %s/%s: %w", cc.Namespace, clusterkit.SecretsRoleName(cc), err)
	case !metav1.IsControlledBy(&role, cc):
		return names, nil
	}
	granted := map[string]bool{}
	for _, rule := range role.Rules {
		if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "secrets") && slices.Contains(rule.Verbs, "get") {
			for _, n := range rule.ResourceNames {
				granted[n] = true
			}
		}
	}
	var missing []string
	for _, n := range names {
		if !granted[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}
