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

// Package workerconfig is the one configuration type of the Conveyor worker.
// conveyor-worker loads it with --config FILE from a Java-properties-style
// file; the operator builds the same type and renders it with
// [Config.Render] into the worker ConfigMap, using the exported Key*
// constants rather than its own copies of the key names.
//
// Keys follow Kafka Connect's distributed worker configuration where one
// exists (bootstrap.servers, group.id, config.storage.topic, ...); Conveyor's
// own keys are documented as such. Unknown keys are kept in Extra and
// passed through (producer.*, consumer.*, admin.*, converter settings).
package workerconfig

import (
	"errors"
	"fmt"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/properties"
)

// Configuration keys.
const (
	KeyBootstrapServers               = "bootstrap.servers"
	KeyGroupID                        = "group.id"
	KeyConfigStorageTopic             = "config.storage.topic"
	KeyConfigStorageReplicationFactor = "config.storage.replication.factor"
	KeyOffsetStorageTopic             = "offset.storage.topic"
	KeyOffsetStorageReplicationFactor = "offset.storage.replication.factor"
	KeyOffsetStoragePartitions        = "offset.storage.partitions"
	KeyStatusStorageTopic             = "status.storage.topic"
	KeyStatusStorageReplicationFactor = "status.storage.replication.factor"
	KeyStatusStoragePartitions        = "status.storage.partitions"
	KeyInternalTopicsCreate           = "internal.topics.create"
	KeyExactlyOnceSourceSupport       = "exactly.once.source.support"
	KeyRestHostName                   = "rest.host.name"
	KeyRestPort                       = "rest.port"
	KeyRestThreadsMax                 = "rest.threads.max"
	KeyRestAdvertisedHostName         = "rest.advertised.host.name"
	KeyRestAdvertisedPort             = "rest.advertised.port"
	KeyRestAuthTokenFile              = "rest.auth.token.file"
	KeyMetricsPort                    = "metrics.port"
	KeyMetricsAuthTokenFile           = "metrics.auth.token.file"
	KeyAllowedFilePaths               = "config.providers.file.allowed.paths"
	KeyAllowedEnvVariables            = "config.providers.env.allowed.variables"
	KeyFileConnectorsAllowedPaths     = "file.connectors.allowed.paths"
	KeyCloudAmbientCredentials        = "cloud.ambient.credentials.enabled"
	KeySecurityProtocol               = "security.protocol"
	KeySSLCALocation                  = "ssl.ca.location"
	KeySSLCertificateLocation         = "ssl.certificate.location"
	KeySSLKeyLocation                 = "ssl.key.location"
	KeySSLEndpointIdentification      = "ssl.endpoint.identification.algorithm"
	KeySSLCertificateVerification     = "enable.ssl.certificate.verification"
	KeyClientRack                     = "client.rack"
	KeySASLMechanism                  = "sasl.mechanism"
	KeySASLUsername                   = "sasl.username"
	KeySASLPasswordFile               = "sasl.password.file"
	KeyWorkerID                       = "worker.id"
	KeyWorkerRevision                 = "worker.revision"
	KeyGroupInstanceID                = "group.instance.id"
	KeyHeartbeatInterval              = "heartbeat.interval.ms"
	KeySessionTimeout                 = "session.timeout.ms"
	KeyRebalanceTimeout               = "rebalance.timeout.ms"
	KeyScheduledRebalanceMaxDelay     = "scheduled.rebalance.max.delay.ms"
	KeyOffsetFlushInterval            = "offset.flush.interval.ms"
	KeyOffsetFlushTimeout             = "offset.flush.timeout.ms"
	KeyTaskShutdownGracefulTimeout    = "task.shutdown.graceful.timeout.ms"
	KeyTaskStallTimeout               = "task.stall.timeout.ms"
	KeyMaxTasksPerWorker              = "max.tasks.per.worker"
	KeyTaskLimitsCheckInterval        = "task.limits.check.interval.ms"
	KeyTopicCreationEnable            = "topic.creation.enable"
	KeyClientOverridePolicy           = clientconfig.KeyPolicy
	KeyClientOverrideAllowlist        = clientconfig.KeyAllowlist
	KeyKeyConverter                   = "key.converter"
	KeyValueConverter                 = "value.converter"
)

// EnvPodIP is the environment variable (set from the Downward API) whose
// value becomes rest.advertised.host.name when that key is unset.
const EnvPodIP = "POD_IP"

// EnvGroupInstanceID is the environment variable (the operator sets it to
// the pod name through the Downward API) whose value becomes
// group.instance.id when that key is unset.
const EnvGroupInstanceID = "GROUP_INSTANCE_ID"

// EnvRevision is the environment variable (the operator sets it from the
// pod's pod-template-hash label through the Downward API) whose value
// becomes worker.revision when that key is unset.
const EnvRevision = "POD_TEMPLATE_HASH"

// EnvRack is the environment variable (the operator sets it from the pod's
// topology label, pod.rack.topologyKey, through the Downward API) whose
// value becomes client.rack when that key is unset.
const EnvRack = "CONVEYOR_RACK"

// Security protocols (security.protocol), as in Kafka.
const (
	ProtocolPlaintext     = clientconfig.ProtocolPlaintext
	ProtocolSSL           = clientconfig.ProtocolSSL
	ProtocolSASLPlaintext = clientconfig.ProtocolSASLPlaintext
	ProtocolSASLSSL       = clientconfig.ProtocolSASLSSL
)

// Broker host name checks (ssl.endpoint.identification.algorithm), as in
// Kafka and librdkafka.
const (
	EndpointIdentificationHTTPS = "https"
	EndpointIdentificationNone  = "none"
)

// SASL mechanisms (sasl.mechanism).
const (
	MechanismPlain       = clientconfig.MechanismPlain
	MechanismScramSHA256 = clientconfig.MechanismScramSHA256
	MechanismScramSHA512 = clientconfig.MechanismScramSHA512
)

// Config is the worker configuration. The zero value is not useful; start
// from [Default] or [Parse].
type Config struct {
	// BootstrapServers (bootstrap.servers) lists the Kafka brokers as
	// host:port, comma-separated in the file. Required.
	BootstrapServers []string
	// GroupID (group.id) is the Kafka group the workers of one cluster form.
	// Required; unique per Kafka cluster.
	GroupID string

	// ConfigStorageTopic (config.storage.topic) is the compacted topic that
	// holds connector configs, task configs and target states. It always has
	// one partition.
	ConfigStorageTopic string
	// ConfigStorageReplicationFactor (config.storage.replication.factor) is
	// the replication factor used when the worker creates the config topic;
	// -1 means the broker default.
	ConfigStorageReplicationFactor int16
	// OffsetStorageTopic (offset.storage.topic) is the compacted topic that
	// holds source connector offsets.
	OffsetStorageTopic string
	// OffsetStorageReplicationFactor (offset.storage.replication.factor):
	// replication factor of the offset topic when created; -1 = broker default.
	OffsetStorageReplicationFactor int16
	// OffsetStoragePartitions (offset.storage.partitions): partitions of the
	// offset topic when created; -1 = broker default.
	OffsetStoragePartitions int32
	// StatusStorageTopic (status.storage.topic) is the compacted topic that
	// holds connector and task statuses.
	StatusStorageTopic string
	// StatusStorageReplicationFactor (status.storage.replication.factor):
	// replication factor of the status topic when created; -1 = broker default.
	StatusStorageReplicationFactor int16
	// StatusStoragePartitions (status.storage.partitions): partitions of the
	// status topic when created; -1 = broker default.
	StatusStoragePartitions int32
	// InternalTopicsCreate (internal.topics.create, Conveyor) lets the worker
	// create missing internal topics. Off by default: on Kubernetes the
	// operator creates them, and the worker only checks them and refuses to
	// start on a missing or wrong one. Standalone mode turns it on.
	InternalTopicsCreate bool
	// ExactlyOnceSourceSupport (exactly.once.source.support, KIP-618) is
	// disabled, preparing or enabled. Enabled, source tasks write their
	// records and offsets in transactions and the leader fences the
	// producers of a connector's earlier tasks before new task configs
	// start; preparing reads the offsets topic read_committed without
	// running transactions (the first step of a rolling upgrade).
	ExactlyOnceSourceSupport string

	// RestHostName (rest.host.name) is the address the REST server binds;
	// unset, it is taken from $POD_IP (see [Config.ApplyEnv]); empty means
	// all interfaces.
	RestHostName string
	// RestPort (rest.port) is the REST API port; 0 picks a free port (tests).
	RestPort int
	// RestThreadsMax (rest.threads.max) bounds the REST requests served at
	// once; more wait (up to the request timeout) for a slot, then get 503.
	RestThreadsMax int
	// RestAdvertisedHostName (rest.advertised.host.name) is the host other
	// workers use to reach this one. Unset, it is taken from $POD_IP, then
	// from rest.host.name, then the host name.
	RestAdvertisedHostName string
	// RestAdvertisedPort (rest.advertised.port) is the port other workers use;
	// 0 means rest.port.
	RestAdvertisedPort int
	// RestAuthTokenFile (rest.auth.token.file, Conveyor) is a file holding the
	// bearer token that REST clients must send. When set, authentication is
	// on (except for /health and /readyz); the file is re-read when it changes.
	RestAuthTokenFile string
	// MetricsPort (metrics.port, Conveyor) serves Prometheus metrics on a
	// separate port; 0 serves them on the REST server at /metrics.
	MetricsPort int
	// MetricsAuthTokenFile (metrics.auth.token.file, Conveyor) holds the
	// bearer token scrapers of metrics.port must send; re-read on change.
	MetricsAuthTokenFile string
	// AllowedFilePaths and AllowedEnvVariables (config.providers.*, Conveyor)
	// are what ${file:} and ${env:} may read in distributed mode; empty
	// turns the provider off (see configprovider.Access).
	AllowedFilePaths, AllowedEnvVariables []string
	// ClientOverridePolicy (connector.client.config.override.policy) says
	// which Kafka client settings connectors may override (None,
	// Principal, All or Allowlist; see runtime/clientconfig), and
	// ClientOverrideAllowlist (connector.client.config.override.allowlist)
	// the ones Allowlist allows.
	ClientOverridePolicy    string
	ClientOverrideAllowlist []string
	// TopicCreationEnable (topic.creation.enable) lets source connectors
	// create their topics with topic.creation.* keys (KIP-158).
	TopicCreationEnable bool
	// FileConnectorsAllowedPaths (file.connectors.allowed.paths, Conveyor)
	// are the directories file connectors (FileSource, FileSink) may open
	// files under in distributed mode, links followed; empty = none.
	// Standalone mode ignores it.
	FileConnectorsAllowedPaths []string
	// CloudAmbientCredentials (cloud.ambient.credentials.enabled, Conveyor)
	// lets connectors without keys of their own (S3Sink) use the worker's
	// ambient cloud credentials in distributed mode. Default false.
	CloudAmbientCredentials bool

	// SecurityProtocol (security.protocol) is PLAINTEXT, SSL, SASL_PLAINTEXT
	// or SASL_SSL.
	SecurityProtocol string
	// SSLCALocation (ssl.ca.location) is a PEM file with the CA certificates
	// that sign the brokers' certificates; empty uses the system roots.
	SSLCALocation string
	// SSLCertificateLocation (ssl.certificate.location) is the PEM client
	// certificate for mutual TLS; set together with ssl.key.location.
	SSLCertificateLocation string
	// SSLKeyLocation (ssl.key.location) is the PEM private key of the client
	// certificate.
	SSLKeyLocation string
	// SSLEndpointIdentification (ssl.endpoint.identification.algorithm) is
	// "https" (the default: a broker's certificate must name the host
	// dialled) or "none" (Kafka's empty value is accepted too): the
	// certificate chain is still verified, only the host name check is off,
	// for brokers reached through addresses their certificates do not list.
	SSLEndpointIdentification string
	// SSLCertificateVerification (enable.ssl.certificate.verification, as in
	// librdkafka) verifies the brokers' certificates; false skips every
	// check (chain and host name): for tests against self-signed brokers
	// only, since anyone on the path can then read and change the traffic.
	SSLCertificateVerification bool
	// ClientRack (client.rack) is the rack (zone) this worker runs in. Its
	// consumers send it with fetches, so brokers with a rack-aware replica
	// selector (KIP-392) serve them from a replica in the same rack.
	ClientRack string
	// SASLMechanism (sasl.mechanism) is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	SASLMechanism string
	// SASLUsername (sasl.username) is the SASL user.
	SASLUsername string
	// SASLPasswordFile (sasl.password.file, Conveyor) is a file holding the
	// SASL password (mounted from a Secret); the password itself never
	// appears in the configuration.
	SASLPasswordFile string

	// WorkerID (worker.id) names this worker in statuses; empty means the
	// advertised host:port.
	WorkerID string
	// GroupInstanceID (group.instance.id) makes the worker a static member
	// of its group (KIP-345): a worker restarted with the same id takes
	// back its place and its tasks without a rebalance. Unique per worker;
	// unset = $GROUP_INSTANCE_ID, else a dynamic member.
	GroupInstanceID string
	// Revision (worker.revision) is the worker's release in a rolling
	// update: while workers of two revisions share the group, those of
	// the revision not started last take no new work, so each task moves
	// once (assignor.Member.Revision). Unset = $POD_TEMPLATE_HASH.
	Revision string
	// HeartbeatInterval (heartbeat.interval.ms) is how often the worker
	// heartbeats to the group coordinator.
	HeartbeatInterval time.Duration
	// SessionTimeout (session.timeout.ms): a worker that does not heartbeat
	// for this long is removed from the group.
	SessionTimeout time.Duration
	// RebalanceTimeout (rebalance.timeout.ms) bounds how long a rebalance
	// waits for members to rejoin.
	RebalanceTimeout time.Duration
	// ScheduledRebalanceMaxDelay (scheduled.rebalance.max.delay.ms) is how long
	// the tasks of a worker that left without notice (a crash) wait for it to
	// come back before they are reassigned. Conveyor's default is seconds, not
	// Kafka's five minutes: a pod that crashes is usually replaced, not restarted.
	ScheduledRebalanceMaxDelay time.Duration
	// OffsetFlushInterval (offset.flush.interval.ms) is how often tasks commit
	// offsets (sinks flush, then commit consumer offsets; sources store
	// source offsets).
	OffsetFlushInterval time.Duration
	// OffsetFlushTimeout (offset.flush.timeout.ms) bounds one offset commit.
	OffsetFlushTimeout time.Duration
	// TaskStallTimeout (task.stall.timeout.ms, Conveyor): a RUNNING task
	// that has work (a source's records in flight, a sink's lag) and makes
	// no progress (records acknowledged, records put) for this long is
	// reported stalled (a metric and its status); 0 turns it off.
	TaskStallTimeout time.Duration
	// TaskShutdownGracefulTimeout (task.shutdown.graceful.timeout.ms) is how
	// long a stopping task may take to flush and commit before it is abandoned.
	TaskShutdownGracefulTimeout time.Duration
	// MaxTasksPerWorker (max.tasks.per.worker, Conveyor) caps the tasks one
	// worker runs; 0 means no cap. The operator uses it to size the cluster.
	MaxTasksPerWorker int
	// TaskLimitsCheckInterval (task.limits.check.interval.ms, Conveyor) is how
	// often connectors' natural task limits (the partition counts of sink
	// topics) are checked again; a change reconfigures the connector's tasks.
	TaskLimitsCheckInterval time.Duration

	// KeyConverter (key.converter) is the default key converter class for
	// connectors that do not set one; settings go in key.converter.* keys
	// (kept in Extra).
	KeyConverter string
	// ValueConverter (value.converter) is the default value converter class.
	ValueConverter string

	// Extra holds every other key: producer.*, consumer.*, admin.* client
	// settings (Kafka client properties of runtime/clientconfig's table),
	// key.converter.* / value.converter.* settings, and keys this worker
	// version does not know.
	Extra map[string]string
}

// fields is the table of known keys, in rendering order.
var fields = []Field{
	listField(KeyBootstrapServers, "", "Kafka brokers as host:port, comma-separated. Required.",
		func(c *Config) *[]string { return &c.BootstrapServers }),
	strField(KeyGroupID, "", "Kafka group the workers of one cluster form; unique per Kafka cluster. Required.",
		func(c *Config) *string { return &c.GroupID }),
	strField(KeyConfigStorageTopic, "connect-configs", "Compacted topic holding connector configs, task configs and target states (one partition).",
		func(c *Config) *string { return &c.ConfigStorageTopic }),
	int16Field(KeyConfigStorageReplicationFactor, "-1", "Replication factor of the config topic when the worker creates it; -1 = broker default.",
		func(c *Config) *int16 { return &c.ConfigStorageReplicationFactor }),
	strField(KeyOffsetStorageTopic, "connect-offsets", "Compacted topic holding source connector offsets.",
		func(c *Config) *string { return &c.OffsetStorageTopic }),
	int16Field(KeyOffsetStorageReplicationFactor, "-1", "Replication factor of the offset topic when the worker creates it; -1 = broker default.",
		func(c *Config) *int16 { return &c.OffsetStorageReplicationFactor }),
	int32Field(KeyOffsetStoragePartitions, "25", "Partitions of the offset topic when the worker creates it; -1 = broker default.",
		func(c *Config) *int32 { return &c.OffsetStoragePartitions }),
	strField(KeyStatusStorageTopic, "connect-status", "Compacted topic holding connector and task statuses.",
		func(c *Config) *string { return &c.StatusStorageTopic }),
	int16Field(KeyStatusStorageReplicationFactor, "-1", "Replication factor of the status topic when the worker creates it; -1 = broker default.",
		func(c *Config) *int16 { return &c.StatusStorageReplicationFactor }),
	int32Field(KeyStatusStoragePartitions, "5", "Partitions of the status topic when the worker creates it; -1 = broker default.",
		func(c *Config) *int32 { return &c.StatusStoragePartitions }),
	boolField(KeyInternalTopicsCreate, "false", "Create missing internal topics (standalone mode); otherwise only check them and refuse to start on a wrong one.",
		func(c *Config) *bool { return &c.InternalTopicsCreate }),
	strField(KeyExactlyOnceSourceSupport, "disabled", "Exactly-once source tasks (KIP-618): disabled, preparing (offsets read read_committed, no transactions) or enabled (records and offsets in one transaction, zombie fencing).",
		func(c *Config) *string { return &c.ExactlyOnceSourceSupport }),
	strField(KeyRestHostName, "", "Address the REST server binds; unset = $POD_IP when set, else all interfaces.",
		func(c *Config) *string { return &c.RestHostName }),
	intField(KeyRestPort, "8083", "REST API port; 0 picks a free port.",
		func(c *Config) *int { return &c.RestPort }),
	strField(KeyRestAdvertisedHostName, "", "Host other workers use to reach this one; unset = $POD_IP, then rest.host.name, then the host name.",
		func(c *Config) *string { return &c.RestAdvertisedHostName }),
	intField(KeyRestThreadsMax, "200", "REST requests served at once; more wait up to the request timeout for a slot, then get 503 (probes and /metrics are never held).",
		func(c *Config) *int { return &c.RestThreadsMax }),
	intField(KeyRestAdvertisedPort, "0", "Port other workers use to reach this one; 0 = rest.port.",
		func(c *Config) *int { return &c.RestAdvertisedPort }),
	strField(KeyRestAuthTokenFile, "", "File holding the REST bearer token; set = authentication on (except /health, /readyz).",
		func(c *Config) *string { return &c.RestAuthTokenFile }),
	intField(KeyMetricsPort, "0", "Separate port for Prometheus metrics; 0 = serve /metrics on the REST port.",
		func(c *Config) *int { return &c.MetricsPort }),
	strField(KeyMetricsAuthTokenFile, "", "File holding the bearer token that scrapers of metrics.port must send; set = authentication on.",
		func(c *Config) *string { return &c.MetricsAuthTokenFile }),
	listField(KeyAllowedFilePaths, "", "Files or directories ${file:...} placeholders may read in distributed mode; empty = ${file:} off.",
		func(c *Config) *[]string { return &c.AllowedFilePaths }),
	listField(KeyFileConnectorsAllowedPaths, "", "Directories file connectors may read and write under in distributed mode (links followed, never the worker's own files); empty = none.",
		func(c *Config) *[]string { return &c.FileConnectorsAllowedPaths }),
	boolField(KeyCloudAmbientCredentials, "false", "Let connectors without keys of their own use the worker's ambient cloud credentials (environment, pod or node role) in distributed mode.",
		func(c *Config) *bool { return &c.CloudAmbientCredentials }),
	listField(KeyAllowedEnvVariables, "", "Environment variables ${env:...} placeholders may read in distributed mode; empty = ${env:} off.",
		func(c *Config) *[]string { return &c.AllowedEnvVariables }),
	strField(KeySecurityProtocol, ProtocolPlaintext, "Kafka security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
		func(c *Config) *string { return &c.SecurityProtocol }),
	strField(KeySSLCALocation, "", "PEM file with the CA certificates of the brokers; empty = system roots.",
		func(c *Config) *string { return &c.SSLCALocation }),
	strField(KeySSLCertificateLocation, "", "PEM client certificate for mutual TLS (with ssl.key.location).",
		func(c *Config) *string { return &c.SSLCertificateLocation }),
	strField(KeySSLKeyLocation, "", "PEM private key of the client certificate.",
		func(c *Config) *string { return &c.SSLKeyLocation }),
	strField(KeySSLEndpointIdentification, EndpointIdentificationHTTPS, "https = a broker certificate must name the host dialled; none = skip that check (the chain is still verified).",
		func(c *Config) *string { return &c.SSLEndpointIdentification }),
	boolField(KeySSLCertificateVerification, "true", "Verify broker certificates; false skips every check (self-signed test brokers only).",
		func(c *Config) *bool { return &c.SSLCertificateVerification }),
	strField(KeySASLMechanism, "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.",
		func(c *Config) *string { return &c.SASLMechanism }),
	strField(KeySASLUsername, "", "SASL user name.",
		func(c *Config) *string { return &c.SASLUsername }),
	strField(KeySASLPasswordFile, "", "File holding the SASL password.",
		func(c *Config) *string { return &c.SASLPasswordFile }),
	strField(KeyClientRack, "", "Rack (zone) of this worker; consumers fetch from a replica in the same rack when the brokers allow it (KIP-392); unset = $CONVEYOR_RACK.",
		func(c *Config) *string { return &c.ClientRack }),
	strField(KeyWorkerID, "", "Name of this worker in statuses; empty = advertised host:port.",
		func(c *Config) *string { return &c.WorkerID }),
	strField(KeyGroupInstanceID, "", "Static group membership (KIP-345): unique per worker, stable across its restarts (the pod name); unset = $GROUP_INSTANCE_ID, else dynamic.",
		func(c *Config) *string { return &c.GroupInstanceID }),
	strField(KeyWorkerRevision, "", "Release of this worker in a rolling update (the pod's pod-template-hash): while two revisions share the group, workers of the one not started last take no new work, so each task moves once; unset = $POD_TEMPLATE_HASH.",
		func(c *Config) *string { return &c.Revision }),
	msField(KeyHeartbeatInterval, "3000", "Interval of group heartbeats, in ms.",
		func(c *Config) *time.Duration { return &c.HeartbeatInterval }),
	msField(KeySessionTimeout, "10000", "A worker silent this long (ms) leaves the group.",
		func(c *Config) *time.Duration { return &c.SessionTimeout }),
	msField(KeyRebalanceTimeout, "60000", "Maximum time (ms) a rebalance waits for members to rejoin.",
		func(c *Config) *time.Duration { return &c.RebalanceTimeout }),
	msField(KeyScheduledRebalanceMaxDelay, "5000", "How long (ms) a crashed worker's tasks wait before they are reassigned.",
		func(c *Config) *time.Duration { return &c.ScheduledRebalanceMaxDelay }),
	msField(KeyOffsetFlushInterval, "10000", "Interval (ms) at which tasks commit offsets.",
		func(c *Config) *time.Duration { return &c.OffsetFlushInterval }),
	msField(KeyOffsetFlushTimeout, "5000", "Maximum time (ms) of one offset commit.",
		func(c *Config) *time.Duration { return &c.OffsetFlushTimeout }),
	msField(KeyTaskStallTimeout, "60000", "A RUNNING task with work and no progress for this long (ms) is reported stalled; 0 = never.",
		func(c *Config) *time.Duration { return &c.TaskStallTimeout }),
	msField(KeyTaskShutdownGracefulTimeout, "5000", "Time (ms) a stopping task may take to flush and commit.",
		func(c *Config) *time.Duration { return &c.TaskShutdownGracefulTimeout }),
	intField(KeyMaxTasksPerWorker, "0", "Maximum tasks one worker runs; 0 = no cap.",
		func(c *Config) *int { return &c.MaxTasksPerWorker }),
	msField(KeyTaskLimitsCheckInterval, "30000", "Interval (ms) at which connectors' natural task limits (sink topics' partition counts) are checked again.",
		func(c *Config) *time.Duration { return &c.TaskLimitsCheckInterval }),
	boolField(KeyTopicCreationEnable, "true", "Source connectors create their topics as their topic.creation.* keys say (KIP-158); false leaves creation to the brokers.",
		func(c *Config) *bool { return &c.TopicCreationEnable }),
	strField(KeyClientOverridePolicy, clientconfig.DefaultPolicy, "Which Kafka client settings connectors may override (producer.override.*, consumer.override.*, admin.override.*): None, Principal (security.protocol, sasl.mechanism, sasl.jaas.config), All or Allowlist.",
		func(c *Config) *string { return &c.ClientOverridePolicy }),
	listField(KeyClientOverrideAllowlist, "", "With connector.client.config.override.policy=Allowlist: the client settings (names without prefix, such as linger.ms) connectors may override; empty = none.",
		func(c *Config) *[]string { return &c.ClientOverrideAllowlist }),
	strField(KeyKeyConverter, converter.JSONClass, "Default key converter class; settings in key.converter.*.",
		func(c *Config) *string { return &c.KeyConverter }),
	strField(KeyValueConverter, converter.JSONClass, "Default value converter class; settings in value.converter.*.",
		func(c *Config) *string { return &c.ValueConverter }),
}

// Default returns a configuration with every default applied and no
// bootstrap servers or group id.
func Default() *Config {
	c := &Config{Extra: map[string]string{}}
	for _, f := range fields {
		if err := f.set(c, f.Default); err != nil {
			panic("workerconfig: bad default: " + err.Error())
		}
	}
	return c
}

// Parse builds a configuration from key/value pairs: defaults first, then
// the given keys. Unknown keys go to Extra. It does not call Validate.
func Parse(m map[string]string) (*Config, error) {
	c := Default()
	var errs []error
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		i, ok := fieldIndex[k]
		if !ok {
			c.Extra[k] = m[k]
			continue
		}
		if err := fields[i].set(c, m[k]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid worker configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// Load reads a properties file, applies the environment (see [Config.ApplyEnv]
// with os.Getenv) and validates the result.
func Load(path string) (*Config, error) {
	m, err := properties.Load(path)
	if err != nil {
		return nil, fmt.Errorf("loading worker configuration: %w", err)
	}
	c, err := Parse(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.ApplyEnv(os.Getenv)
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ApplyEnv fills settings that come from the environment: an unset
// group.instance.id becomes $GROUP_INSTANCE_ID, an unset client.rack
// $CONVEYOR_RACK (the node's zone: sink consumers then fetch from a replica
// in it, KIP-392), an unset
// rest.advertised.host.name becomes $POD_IP, and so does an unset
// rest.host.name, so that a worker pod's REST server listens on the pod's
// own address only: probes, Services, the operator and other workers all
// reach it there, and pods that share one network namespace (the local
// cluster of `make dev`) do not collide on port 8083. Without $POD_IP (a
// worker outside Kubernetes) rest.host.name stays as written.
func (c *Config) ApplyEnv(getenv func(string) string) {
	podIP := strings.TrimSpace(getenv(EnvPodIP))
	if c.RestAdvertisedHostName == "" {
		c.RestAdvertisedHostName = podIP
	}
	if c.RestHostName == "" {
		c.RestHostName = podIP
	}
	if c.GroupInstanceID == "" {
		c.GroupInstanceID = strings.TrimSpace(getenv(EnvGroupInstanceID))
	}
	if c.ClientRack == "" {
		c.ClientRack = strings.TrimSpace(getenv(EnvRack))
	}
	if c.Revision == "" {
		c.Revision = strings.TrimSpace(getenv(EnvRevision))
	}
}

// ExactlyOnceEnabled reports whether exactly.once.source.support=enabled.
func (c *Config) ExactlyOnceEnabled() bool {
	return strings.EqualFold(c.ExactlyOnceSourceSupport, "enabled")
}

// ExactlyOnceReadCommitted reports whether the offsets topic is read
// read_committed (preparing or enabled).
func (c *Config) ExactlyOnceReadCommitted() bool {
	return c.ExactlyOnceEnabled() || strings.EqualFold(c.ExactlyOnceSourceSupport, "preparing")
}

// ConverterConfig returns the worker-level converter settings for
// converter.FromConfig: key.converter / value.converter and their
// key.converter.* / value.converter.* entries.
func (c *Config) ConverterConfig() map[string]string {
	m := map[string]string{KeyKeyConverter: c.KeyConverter, KeyValueConverter: c.ValueConverter}
	for k, v := range c.Extra {
		if strings.HasPrefix(k, "key.converter.") || strings.HasPrefix(k, "value.converter.") || strings.HasPrefix(k, "header.converter.") {
			m[k] = v
		}
	}
	return m
}

// AdvertisedHost returns the host other workers use: rest.advertised.host.name,
// else rest.host.name, else the host name, else 127.0.0.1.
func (c *Config) AdvertisedHost() string {
	if c.RestAdvertisedHostName != "" {
		return c.RestAdvertisedHostName
	}
	if c.RestHostName != "" && c.RestHostName != "0.0.0.0" && c.RestHostName != "::" {
		return c.RestHostName
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "127.0.0.1"
}

// AdvertisedPort returns rest.advertised.port, or rest.port when unset.
func (c *Config) AdvertisedPort() int {
	if c.RestAdvertisedPort != 0 {
		return c.RestAdvertisedPort
	}
	return c.RestPort
}

// AdvertisedURL returns the REST URL other workers use, http://host:port.
func (c *Config) AdvertisedURL() string {
	return "http://" + net.JoinHostPort(c.AdvertisedHost(), strconv.Itoa(c.AdvertisedPort()))
}

// RestListenAddress returns the host:port the REST server listens on.
func (c *Config) RestListenAddress() string {
	return net.JoinHostPort(c.RestHostName, strconv.Itoa(c.RestPort))
}

// EffectiveWorkerID returns worker.id, or the advertised host:port.
func (c *Config) EffectiveWorkerID() string {
	if c.WorkerID != "" {
		return c.WorkerID
	}
	return net.JoinHostPort(c.AdvertisedHost(), strconv.Itoa(c.AdvertisedPort()))
}

// UsesTLS reports whether Kafka connections use TLS.
func (c *Config) UsesTLS() bool {
	return c.SecurityProtocol == ProtocolSSL || c.SecurityProtocol == ProtocolSASLSSL
}

// VerifiesBrokerHostName reports whether a broker's certificate must name
// the host dialled (ssl.endpoint.identification.algorithm=https).
func (c *Config) VerifiesBrokerHostName() bool {
	return strings.EqualFold(c.SSLEndpointIdentification, EndpointIdentificationHTTPS)
}

// UsesSASL reports whether Kafka connections authenticate with SASL.
func (c *Config) UsesSASL() bool {
	return c.SecurityProtocol == ProtocolSASLPlaintext || c.SecurityProtocol == ProtocolSASLSSL
}

// SASLPassword reads the SASL password from sasl.password.file (trailing
// newline removed).
func (c *Config) SASLPassword() (string, error) {
	return readSecretFile(KeySASLPasswordFile, c.SASLPasswordFile)
}

// RestAuthToken reads the REST bearer token from rest.auth.token.file;
// "" when authentication is off.
func (c *Config) RestAuthToken() (string, error) {
	if c.RestAuthTokenFile == "" {
		return "", nil
	}
	return readSecretFile(KeyRestAuthTokenFile, c.RestAuthTokenFile)
}

func readSecretFile(key, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%s is not set", key)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: reading %s: %w", key, path, err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%s: %s is empty", key, path)
	}
	return s, nil
}
