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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// ChildInputs are everything the children of a cluster depend on besides its spec.
type ChildInputs struct {
	// Image is the worker image (spec.image or the operator's own).
	Image string
	// OperatorNamespace is admitted to the REST port by the NetworkPolicy.
	OperatorNamespace string
	// Replicas is the capacity decision; nil when autoscaling owns the count.
	Replicas *int32
	// RestToken is the token of the generated REST token Secret: the existing
	// one, or a new one when there is none. Unused when authentication is off
	// or restApi.authentication.tokenSecret names the user's own Secret.
	RestToken string
	// MetricsToken is the token of the generated metrics token Secret, as
	// RestToken is of the REST one.
	MetricsToken string
	// SASLUsername is the SASL user read from its Secret.
	SASLUsername string
	// SecretNames are the allowed Secrets the cluster's connectors reference
	// (AllowedSecretNames): the workers may read exactly these.
	SecretNames []string
}

// Children are the objects a cluster owns. A nil member is one the cluster
// does not want (and the reconciler removes if it exists).
type Children struct {
	ServiceAccount      *corev1.ServiceAccount
	SecretsRole         *rbacv1.Role
	SecretsRoleBinding  *rbacv1.RoleBinding
	ConfigMap           *corev1.ConfigMap
	RestTokenSecret     *corev1.Secret
	MetricsTokenSecret  *corev1.Secret
	Service             *corev1.Service
	PodDisruptionBudget *policyv1.PodDisruptionBudget
	NetworkPolicy       *networkingv1.NetworkPolicy
	Deployment          *appsv1.Deployment
}

// GeneratesRestToken reports whether the operator keeps the cluster's REST
// token Secret (authentication on, and no user Secret named).
func GeneratesRestToken(cc *v1alpha1.ConnectCluster) bool {
	return cc.RestAuthenticationEnabled() && cc.Spec.RestAPI.Authentication.TokenSecret == nil
}

// BuildChildren builds every child of a cluster. It fails only when the spec
// renders to an invalid worker configuration; the error names the key.
func BuildChildren(cc *v1alpha1.ConnectCluster, in ChildInputs) (*Children, error) {
	cfg, err := BuildWorkerConfig(cc, WorkerConfigInputs{SASLUsername: in.SASLUsername})
	if err != nil {
		return nil, err
	}
	cm := BuildWorkerConfigMap(cc, cfg)
	ch := &Children{
		ServiceAccount:      BuildServiceAccount(cc),
		ConfigMap:           cm,
		Service:             BuildService(cc),
		PodDisruptionBudget: BuildPodDisruptionBudget(cc),
		Deployment: BuildWorkerDeployment(cc, DeploymentInputs{
			Image:      in.Image,
			Replicas:   in.Replicas,
			ConfigHash: ConfigHash(cm),
		}),
	}
	ch.SecretsRole, ch.SecretsRoleBinding = BuildSecretsRole(cc, in.SecretNames)
	if GeneratesRestToken(cc) {
		ch.RestTokenSecret = BuildRestTokenSecret(cc, in.RestToken)
	}
	if GeneratesMetricsToken(cc) {
		ch.MetricsTokenSecret = BuildMetricsTokenSecret(cc, in.MetricsToken)
	}
	if cc.NetworkPolicyEnabled() {
		ch.NetworkPolicy = BuildNetworkPolicy(cc, in.OperatorNamespace)
	}
	return ch, nil
}

// Objects lists the wanted children in the order they are applied: the
// Deployment last, after everything its pods mount or use.
func (c *Children) Objects() []client.Object {
	var out []client.Object
	add := func(o client.Object, want bool) {
		if want {
			out = append(out, o)
		}
	}
	add(c.ServiceAccount, c.ServiceAccount != nil)
	add(c.SecretsRole, c.SecretsRole != nil)
	add(c.SecretsRoleBinding, c.SecretsRoleBinding != nil)
	add(c.RestTokenSecret, c.RestTokenSecret != nil)
	add(c.MetricsTokenSecret, c.MetricsTokenSecret != nil)
	add(c.ConfigMap, c.ConfigMap != nil)
	add(c.Service, c.Service != nil)
	add(c.PodDisruptionBudget, c.PodDisruptionBudget != nil)
	add(c.NetworkPolicy, c.NetworkPolicy != nil)
	add(c.Deployment, c.Deployment != nil)
	return out
}
