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

package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// ConnectorAccess is what the connectors of one ConnectCluster may read
// through config placeholders. It is set by whoever may write the
// ConnectCluster (the cluster's owner), never by a KafkaConnector's author:
// every connector of a cluster runs with the workers' one identity, so what
// one connector may read, all of them may.
//
// Why an allow-list here rather than a label on the Secret: the cluster's
// owner already names the Secrets the workers hold (spec.kafka's TLS and
// SASL Secrets, the REST token), the list lives in git with the cluster
// (GitOps), the operator decides from the spec alone without reading any
// Secret's labels, and the same one place also holds the file and
// environment lists. A label would let anyone who may patch a Secret hand
// it to every connector of a cluster they do not own.
type ConnectorAccess struct {
	// secrets names the Secrets, in the cluster's namespace, that its
	// connectors may reference with ${secret:<name>:<key>}. The workers'
	// Role grants "get" on exactly the listed Secrets that a connector
	// references; a connector referencing any other Secret gets
	// Ready=False with reason SecretNotAllowed and no grant.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Secrets []string `json:"secrets,omitempty"`

	// filePaths are the absolute paths of the files, or directories, in the
	// worker container that ${file:...} may read. Empty (the default) turns
	// ${file:...} off. The worker's own credentials (/etc/conveyor,
	// /var/run/secrets, /run/secrets) and /proc, /sys and /dev can never
	// be listed, nor a directory holding them; links are followed before
	// the check.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.startsWith('/') && p != '/' && !p.endsWith('/') && !p.contains('//') && !p.matches('(^|/)[.][.]?(/|$)'))",message="connectorAccess.filePaths must be clean absolute paths, such as /opt/connectors/creds: no '/', no trailing '/', no '.' or '..' segments"
	// +kubebuilder:validation:XValidation:rule="self.all(p, ['/etc/conveyor', '/var/run/secrets', '/run/secrets', '/proc', '/sys', '/dev'].all(f, p != f && !p.startsWith(f + '/') && !f.startsWith(p + '/')))",message="connectorAccess.filePaths may not reach the worker's own credentials: remove paths under or above /etc/conveyor, /var/run/secrets, /run/secrets, /proc, /sys or /dev"
	FilePaths []string `json:"filePaths,omitempty"`

	// envVariables are the environment variables of the worker container
	// that ${env:<VAR>} may read. Empty (the default) turns ${env:...} off.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	EnvVariables []string `json:"envVariables,omitempty"`

	// fileConnectors are the directories FileSource and FileSink may read
	// and write under, each a volume of its own mounted at its path in the
	// worker container (so a connector that fills one never fills the
	// workers' own scratch space). Paths are judged after links are
	// followed, again at every open and every directory or glob listing.
	// Empty (the default) gives file connectors no path at all. The
	// workers' own folders (/etc/conveyor, /var/run/secrets, /run/secrets,
	// /tmp, /proc, /sys, /dev) can never be listed, nor a directory above
	// them.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=16
	FileConnectors []FileConnectorVolume `json:"fileConnectors,omitempty"`

	// ambientCloudCredentials lets connectors without keys of their own
	// (S3Sink without aws.access.key.id) use the workers' ambient cloud
	// identity: the AWS environment variables, the pod's or node's role.
	// Default false: such a connector is refused, naming the key to set.
	// +optional
	AmbientCloudCredentials bool `json:"ambientCloudCredentials,omitempty"`
}

// FileConnectorVolume is a directory granted to the file connectors.
type FileConnectorVolume struct {
	// path is where the volume is mounted in the worker container, and the
	// directory file connectors may use.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/') && self != '/' && !self.endsWith('/') && !self.contains('//') && !self.matches('(^|/)[.][.]?(/|$)')",message="fileConnectors[].path must be a clean absolute path, such as /data/orders: not '/', no trailing '/', no '.' or '..' segments"
	// +kubebuilder:validation:XValidation:rule="['/etc/conveyor', '/var/run/secrets', '/run/secrets', '/tmp', '/proc', '/sys', '/dev'].all(f, self != f && !self.startsWith(f + '/') && !f.startsWith(self + '/'))",message="fileConnectors[].path may not reach the workers' own folders: choose a path outside and not above /etc/conveyor, /var/run/secrets, /run/secrets, /tmp, /proc, /sys and /dev, such as /data/orders"
	Path string `json:"path"`

	// claimName mounts this PersistentVolumeClaim (in the cluster's
	// namespace) at path. Absent: an emptyDir of sizeLimit.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName,omitempty"`

	// sizeLimit bounds the emptyDir mounted at path (without claimName).
	// Default 1Gi.
	// +optional
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`
}

// MetricsSpec configures the workers' Prometheus metrics.
type MetricsSpec struct {
	// enabled serves Prometheus metrics, named after Kafka Connect's, at
	// /metrics on port and annotates the pods for scraping. Default true.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// port serves /metrics, apart from the REST port 8083 so that the
	// NetworkPolicy can admit scrapers without opening the REST API to them.
	// Default 9404.
	// +optional
	// +kubebuilder:default=9404
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self != 8083",message="metrics.port must differ from 8083, the REST API port"
	Port *int32 `json:"port,omitempty"`

	// authentication protects /metrics with a bearer token of its own (not
	// the REST token, which would let a scraper manage connectors). On by
	// default.
	// +optional
	// +kubebuilder:default={}
	Authentication MetricsAuthentication `json:"authentication,omitempty"`

	// podMonitor makes the operator keep a prometheus-operator PodMonitor
	// (monitoring.coreos.com/v1) that scrapes the workers' metrics port with
	// the metrics token. It needs the PodMonitor CRD; without it the
	// Monitoring condition says PodMonitorCRDNotInstalled and nothing else
	// changes. Absent means no PodMonitor.
	// +optional
	PodMonitor *PodMonitorSpec `json:"podMonitor,omitempty"`
}

// PodMonitorSpec configures the derived PodMonitor "<cluster>-connect".
type PodMonitorSpec struct {
	// enabled keeps the PodMonitor; false removes it. Default false.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// interval is how often Prometheus scrapes each worker, as a
	// Prometheus duration such as "30s" or "1m". Absent leaves
	// Prometheus' own scrape interval.
	// +optional
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	Interval string `json:"interval,omitempty"`

	// labels are added to the PodMonitor's labels, for a Prometheus whose
	// podMonitorSelector picks monitors by label (for example
	// release: prometheus).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// MetricsAuthentication protects the metrics port with a bearer token.
type MetricsAuthentication struct {
	// enabled requires "Authorization: Bearer <token>" on every scrape;
	// others get 401. Prometheus sends it with
	// authorization.credentials_file. Default true.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// tokenSecret references the Secret key holding the scrape token.
	// Absent means the operator generates one, in a Secret named
	// "<cluster>-metrics-token" with key "token". The workers read the
	// token again when the Secret changes.
	// +optional
	TokenSecret *SecretKeyRef `json:"tokenSecret,omitempty"`
}

// ClientOverridePolicy says which Kafka client settings connectors may
// override (Kafka's connector.client.config.override.policy and, from
// Kafka 4.2, connector.client.config.override.allowlist, KIP-1188).
// +kubebuilder:validation:XValidation:rule="!has(self.allowlist) || size(self.allowlist) == 0 || (has(self.policy) && self.policy == 'Allowlist')",message="connectorClientOverrides.allowlist is read only with policy Allowlist: set policy: Allowlist or remove the list"
type ClientOverridePolicy struct {
	// policy is None (no override), Principal (only a connector's own
	// Kafka login: security.protocol, sasl.mechanism, sasl.jaas.config;
	// deprecated by Kafka 4.2 in favour of Allowlist), All (every client
	// setting Conveyor supports; Kafka 4.x's default) or Allowlist (the
	// settings in allowlist; Kafka 5.0's default).
	// +optional
	// +kubebuilder:validation:Enum=None;Principal;All;Allowlist
	// +kubebuilder:default=All
	Policy string `json:"policy,omitempty"`

	// allowlist names the client settings connectors may override with
	// policy Allowlist, without prefix (linger.ms allows
	// producer.override.linger.ms); each must be one Conveyor supports (see
	// docs/connectors/client-overrides.md). Empty: no override.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[a-z][a-z0-9.]*$`
	Allowlist []string `json:"allowlist,omitempty"`
}
