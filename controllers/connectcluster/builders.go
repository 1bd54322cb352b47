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
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
)

// BuildServiceAccount builds the worker pods' ServiceAccount. The workers use
// it to read the Secrets that connector configs reference as
// ${secret:<name>:<key>} (BuildSecretsRole: a Role that lists exactly those
// Secrets).
func BuildServiceAccount(cc *v1alpha1.ConnectCluster) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: objectMeta(cc, ServiceAccountName(cc)),
	}
}

// BuildService builds the ClusterIP Service in front of the workers' REST API
// (and metrics, when they are served on a port of their own).
func BuildService(cc *v1alpha1.ConnectCluster) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(cc, ServiceName(cc)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: clusterkit.SelectorLabels(cc),
			Ports: []corev1.ServicePort{{
				Name:        RestPortName,
				Port:        v1alpha1.RestPort,
				TargetPort:  intstr.FromString(RestPortName),
				Protocol:    corev1.ProtocolTCP,
				AppProtocol: ptr.To("http"),
			}},
		},
	}
	if cc.MetricsEnabled() {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name:        MetricsPortName,
			Port:        cc.MetricsPort(),
			TargetPort:  intstr.FromString(MetricsPortName),
			Protocol:    corev1.ProtocolTCP,
			AppProtocol: ptr.To("http"),
		})
	}
	return svc
}

// BuildPodDisruptionBudget lets voluntary disruptions (drains, upgrades) take
// down one worker at a time, so the others keep the tasks running.
func BuildPodDisruptionBudget(cc *v1alpha1.ConnectCluster) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: objectMeta(cc, PodDisruptionBudgetName(cc)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: clusterkit.SelectorLabels(cc)},
		},
	}
}

// BuildNetworkPolicy admits to the worker pods only:
//   - the REST port from the operator's namespace (the operator drives
//     connectors through it) and from the cluster's own workers (followers
//     forward writes to the leader);
//   - the metrics port from the namespaces networkPolicy.metricsNamespaceSelector
//     selects (when metrics are on).
//
// Egress stays open unless networkPolicy.egress is set: then the workers
// reach the listed destinations plus what they need themselves (see
// workerEgress). operatorNamespace empty (an operator run outside the
// cluster) leaves the operator peer out.
func BuildNetworkPolicy(cc *v1alpha1.ConnectCluster, operatorNamespace string) *networkingv1.NetworkPolicy {
	restPeers := []networkingv1.NetworkPolicyPeer{{
		PodSelector: &metav1.LabelSelector{MatchLabels: clusterkit.SelectorLabels(cc)},
	}}
	if operatorNamespace != "" {
		restPeers = append(restPeers, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNamespace}},
		})
	}
	tcp := corev1.ProtocolTCP
	rules := []networkingv1.NetworkPolicyIngressRule{{
		From:  restPeers,
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(v1alpha1.RestPort))}},
	}}
	if sel := cc.Spec.NetworkPolicy.MetricsNamespaceSelector; cc.MetricsEnabled() && sel != nil {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel.DeepCopy()}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(cc.MetricsPort()))}},
		})
	}
	np := &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: objectMeta(cc, NetworkPolicyName(cc)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: clusterkit.SelectorLabels(cc)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     rules,
		},
	}
	if cc.Spec.NetworkPolicy.Egress != nil {
		np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		np.Spec.Egress = workerEgress(cc)
	}
	return np
}

// workerEgress is the egress allow-list of the workers: what the
// workers need themselves (the Kafka bootstrap servers' ports, DNS, the
// other workers' REST port for forwarding), then the cluster owner's
// networkPolicy.egress, as given. Kafka brokers are allowed by port: their
// addresses are not known to the operator, and a NetworkPolicy cannot name
// hosts. The Kubernetes API (for ${secret:} placeholders) is not added: a
// rule for port 443 alone would open every HTTPS server, and its address
// depends on the cluster, so the owner lists it (an ipBlock of the API
// server's endpoints) in networkPolicy.egress.
func workerEgress(cc *v1alpha1.ConnectCluster) []networkingv1.NetworkPolicyEgressRule {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(proto *corev1.Protocol, p int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: proto, Port: ptr.To(intstr.FromInt32(p))}
	}
	var kafka []networkingv1.NetworkPolicyPort
	seen := map[int32]bool{}
	for _, b := range strings.Split(cc.Spec.Kafka.BootstrapServers, ",") {
		_, p, err := net.SplitHostPort(strings.TrimSpace(b))
		n, perr := strconv.ParseInt(p, 10, 32)
		if err != nil || perr != nil || seen[int32(n)] {
			continue
		}
		seen[int32(n)] = true
		kafka = append(kafka, port(&tcp, int32(n)))
	}
	out := []networkingv1.NetworkPolicyEgressRule{
		{Ports: []networkingv1.NetworkPolicyPort{port(&udp, 53), port(&tcp, 53)}},
		{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: clusterkit.SelectorLabels(cc)}}},
			Ports: []networkingv1.NetworkPolicyPort{port(&tcp, v1alpha1.RestPort)}},
	}
	if len(kafka) > 0 {
		out = append(out, networkingv1.NetworkPolicyEgressRule{Ports: kafka})
	}
	for _, r := range cc.Spec.NetworkPolicy.Egress {
		out = append(out, *r.DeepCopy())
	}
	return out
}

// NewRestToken returns a random REST API bearer token: 32 bytes from r
// (crypto/rand.Reader when nil), base64url-encoded.
func NewRestToken(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("generating the REST API token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// BuildRestTokenSecret builds the generated REST token Secret
// ("<cluster>-rest-token", key "token"). The caller passes the token: the one
// the existing Secret holds, or a new one (NewRestToken) only when there is no
// Secret yet, so a reconcile never rotates it by accident.
func BuildRestTokenSecret(cc *v1alpha1.ConnectCluster, token string) *corev1.Secret {
	return buildTokenSecret(cc, cc.RestTokenSecret(), token)
}

// buildTokenSecret is a generated token Secret of the cluster: ref's key
// holds token.
func buildTokenSecret(cc *v1alpha1.ConnectCluster, ref v1alpha1.SecretKeyRef, token string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(cc, ref.Name),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{ref.Key: []byte(token)},
	}
}
