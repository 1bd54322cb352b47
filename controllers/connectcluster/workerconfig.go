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
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// WorkerConfigInputs are the values the worker config takes from outside the spec.
type WorkerConfigInputs struct {
	// SASLUsername is the user name read from kafka.sasl.username's Secret:
	// the worker takes sasl.username as a value (the password comes as a file).
	SASLUsername string
}

// BuildWorkerConfig renders a cluster's spec into the worker configuration
// type that conveyor-worker --config loads. spec.config goes first, then the
// keys the operator owns (the API refuses those in spec.config already; they
// win here too). rest.advertised.host.name stays unset: the worker takes it
// from $POD_IP. Secrets stay in files: the REST token and the Kafka TLS/SASL
// material are referenced by the paths the Deployment mounts them at.
func BuildWorkerConfig(cc *v1alpha1.ConnectCluster, in WorkerConfigInputs) (*workerconfig.Config, error) {
	cfg := workerconfig.Default()
	for _, k := range slices.Sorted(maps.Keys(cc.Spec.Config)) {
		if err := cfg.Set(k, cc.Spec.Config[k]); err != nil {
			return nil, fmt.Errorf("spec.config[%q]: %w", k, err)
		}
	}
	cfg.BootstrapServers = clusterkit.SplitServers(cc.Spec.Kafka.BootstrapServers)
	cfg.GroupID = cc.GroupID()
	rf := int16(cc.StorageReplicationFactor())
	cfg.ConfigStorageTopic = cc.ConfigTopic()
	cfg.ConfigStorageReplicationFactor = rf
	cfg.OffsetStorageTopic = cc.OffsetTopic()
	cfg.OffsetStorageReplicationFactor = rf
	cfg.OffsetStoragePartitions = cc.OffsetPartitions()
	cfg.StatusStorageTopic = cc.StatusTopic()
	cfg.StatusStorageReplicationFactor = rf
	cfg.StatusStoragePartitions = cc.StatusPartitions()
	// The operator creates and verifies the internal topics; workers only check them.
	cfg.InternalTopicsCreate = false

	cfg.RestHostName = ""
	cfg.RestPort = int(v1alpha1.RestPort)
	cfg.RestAdvertisedHostName = ""
	cfg.RestAdvertisedPort = 0
	cfg.RestAuthTokenFile = ""
	if cc.RestAuthenticationEnabled() {
		cfg.RestAuthTokenFile = ConfigDir + "/" + RestTokenPath
	}
	cfg.MetricsPort, cfg.MetricsAuthTokenFile = 0, ""
	if cc.MetricsEnabled() {
		cfg.MetricsPort = int(cc.MetricsPort())
	}
	if cc.MetricsAuthenticationEnabled() {
		cfg.MetricsAuthTokenFile = ConfigDir + "/" + MetricsTokenPath
	}
	// What connectors may read through ${file:} and ${env:}: the cluster
	// owner's lists, nothing else (${secret:} is bounded by the Role).
	cfg.AllowedFilePaths = slices.Clone(cc.AllowedFilePaths())
	cfg.AllowedEnvVariables = slices.Clone(cc.AllowedEnvVariables())
	// Where file connectors may open files (each a volume of its own, see
	// workerVolumes) and whether connectors may use the pod's cloud identity.
	cfg.FileConnectorsAllowedPaths = cc.FileConnectorPaths()
	cfg.CloudAmbientCredentials = cc.AmbientCloudCredentialsAllowed()
	// Which client settings connectors may override (KIP-458, KIP-1188).
	cfg.ClientOverridePolicy, cfg.ClientOverrideAllowlist = cc.ClientOverridePolicy()
	if cfg.ClientOverridePolicy == "" {
		cfg.ClientOverridePolicy = workerconfig.Default().ClientOverridePolicy
	}
	cfg.ClientOverrideAllowlist = slices.Clone(cfg.ClientOverrideAllowlist)

	tls, sasl := cc.Spec.Kafka.TLS, cc.Spec.Kafka.SASL
	cfg.SSLCALocation, cfg.SSLCertificateLocation, cfg.SSLKeyLocation = "", "", ""
	cfg.SASLMechanism, cfg.SASLUsername, cfg.SASLPasswordFile = "", "", ""
	switch {
	case tls != nil && sasl != nil:
		cfg.SecurityProtocol = workerconfig.ProtocolSASLSSL
	case tls != nil:
		cfg.SecurityProtocol = workerconfig.ProtocolSSL
	case sasl != nil:
		cfg.SecurityProtocol = workerconfig.ProtocolSASLPlaintext
	default:
		cfg.SecurityProtocol = workerconfig.ProtocolPlaintext
	}
	if tls != nil {
		if tls.CA != nil {
			cfg.SSLCALocation = ConfigDir + "/" + KafkaTLSSubdir + "/" + KafkaTLSCAFile
		}
		if tls.Certificate != nil && tls.Key != nil {
			cfg.SSLCertificateLocation = ConfigDir + "/" + KafkaTLSSubdir + "/" + KafkaTLSCertFile
			cfg.SSLKeyLocation = ConfigDir + "/" + KafkaTLSSubdir + "/" + KafkaTLSKeyFile
		}
	}
	if sasl != nil {
		cfg.SASLMechanism = string(sasl.Mechanism)
		cfg.SASLUsername = in.SASLUsername
		cfg.SASLPasswordFile = ConfigDir + "/" + KafkaSASLSubdir + "/" + KafkaSASLPasswordFile
	}

	// Exactly-once sources (KIP-618); their topics are then read
	// read_committed by sink consumers unless spec.config says otherwise.
	cfg.ExactlyOnceSourceSupport = cc.ExactlyOnceSourceSupport()
	if cfg.ExactlyOnceSourceSupport == "enabled" {
		if _, set := cc.Spec.Config[KeyConsumerIsolationLevel]; !set {
			if err := cfg.Set(KeyConsumerIsolationLevel, "read_committed"); err != nil {
				return nil, err
			}
		}
	}
	cfg.ScheduledRebalanceMaxDelay = cc.LostWorkerDelay()
	cfg.MaxTasksPerWorker = int(cc.MaxTasksPerWorker())

	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// KeyConsumerIsolationLevel is the worker's sink consumer isolation level.
const KeyConsumerIsolationLevel = "consumer.isolation.level"

// BuildWorkerConfigMap builds the ConfigMap holding worker.properties.
func BuildWorkerConfigMap(cc *v1alpha1.ConnectCluster, cfg *workerconfig.Config) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(cc, ConfigMapName(cc)),
		Data:       map[string]string{ConfigFileName: string(cfg.Render())},
	}
}

// ConfigHash is the pod template's clusterkit.AnnotationConfigHash: a hash of the
// rendered worker.properties, so that any change to it rolls the workers.
func ConfigHash(cm *corev1.ConfigMap) string {
	sum := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		fmt.Fprintf(sum, "%s\x00%s\x00", k, cm.Data[k])
	}
	return hex.EncodeToString(sum.Sum(nil))[:16]
}
