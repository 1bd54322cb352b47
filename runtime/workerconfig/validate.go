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

package workerconfig

import (
	"errors"
	"fmt"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/converter"
)

// Validate checks the configuration and returns every problem, each naming
// its key and the fix.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if len(c.BootstrapServers) == 0 {
		bad(KeyBootstrapServers, "required: set the Kafka brokers as host:port[,host:port...]")
	}
	for _, s := range c.BootstrapServers {
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" {
			bad(KeyBootstrapServers, "%q is not host:port", s)
			continue
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			bad(KeyBootstrapServers, "%q has an invalid port", s)
		}
	}
	switch strings.ToLower(c.ExactlyOnceSourceSupport) {
	case "disabled", "preparing", "enabled":
	default:
		bad(KeyExactlyOnceSourceSupport, "%q: use disabled, preparing or enabled", c.ExactlyOnceSourceSupport)
	}
	if _, err := c.OverridePolicy(); err != nil {
		errs = append(errs, err)
	}
	for _, kind := range clientconfig.Kinds {
		if _, err := clientconfig.Worker(kind, c.Prefixed(kind.WorkerPrefix())); err != nil {
			errs = append(errs, err)
		}
	}
	if strings.TrimSpace(c.GroupID) == "" {
		bad(KeyGroupID, "required: set the group the workers of this cluster share")
	}
	topics := []struct{ key, name string }{
		{KeyConfigStorageTopic, c.ConfigStorageTopic},
		{KeyOffsetStorageTopic, c.OffsetStorageTopic},
		{KeyStatusStorageTopic, c.StatusStorageTopic},
	}
	var seen []string
	for _, t := range topics {
		switch {
		case t.name == "":
			bad(t.key, "must not be empty")
		case !validTopicName(t.name):
			bad(t.key, "%q is not a valid topic name (letters, digits, '.', '_', '-'; at most 249 characters)", t.name)
		case slices.Contains(seen, t.name):
			bad(t.key, "topic %q is also used by another internal topic; the three storage topics must differ", t.name)
		}
		seen = append(seen, t.name)
	}
	for _, rf := range []struct {
		key string
		v   int16
	}{
		{KeyConfigStorageReplicationFactor, c.ConfigStorageReplicationFactor},
		{KeyOffsetStorageReplicationFactor, c.OffsetStorageReplicationFactor},
		{KeyStatusStorageReplicationFactor, c.StatusStorageReplicationFactor},
	} {
		if rf.v == 0 || rf.v < -1 {
			bad(rf.key, "%d is invalid: use -1 (broker default) or a value >= 1", rf.v)
		}
	}
	for _, p := range []struct {
		key string
		v   int32
	}{
		{KeyOffsetStoragePartitions, c.OffsetStoragePartitions},
		{KeyStatusStoragePartitions, c.StatusStoragePartitions},
	} {
		if p.v == 0 || p.v < -1 {
			bad(p.key, "%d is invalid: use -1 (broker default) or a value >= 1", p.v)
		}
	}
	for _, p := range []struct {
		key string
		v   int
	}{{KeyRestPort, c.RestPort}, {KeyRestAdvertisedPort, c.RestAdvertisedPort}, {KeyMetricsPort, c.MetricsPort}} {
		if p.v < 0 || p.v > 65535 {
			bad(p.key, "%d is not a port (0-65535)", p.v)
		}
	}
	if c.RestThreadsMax < 1 {
		bad(KeyRestThreadsMax, "%d is invalid: use at least 1 (default 200)", c.RestThreadsMax)
	}
	if c.MetricsPort != 0 && c.MetricsPort == c.RestPort {
		bad(KeyMetricsPort, "%d is also rest.port; use 0 to serve metrics on the REST server", c.MetricsPort)
	}
	switch c.SecurityProtocol {
	case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
	default:
		bad(KeySecurityProtocol, "%q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", c.SecurityProtocol)
	}
	if !c.UsesTLS() {
		for _, k := range []struct{ key, v string }{
			{KeySSLCALocation, c.SSLCALocation}, {KeySSLCertificateLocation, c.SSLCertificateLocation}, {KeySSLKeyLocation, c.SSLKeyLocation},
		} {
			if k.v != "" {
				bad(k.key, "is set but security.protocol=%s does not use TLS; use SSL or SASL_SSL", c.SecurityProtocol)
			}
		}
	}
	if !c.UsesTLS() && (!c.VerifiesBrokerHostName() || !c.SSLCertificateVerification) {
		key := KeySSLEndpointIdentification
		if !c.SSLCertificateVerification {
			key = KeySSLCertificateVerification
		}
		bad(key, "is set but security.protocol=%s does not use TLS; use SSL or SASL_SSL, or remove it", c.SecurityProtocol)
	}
	switch strings.ToLower(c.SSLEndpointIdentification) {
	case EndpointIdentificationHTTPS, EndpointIdentificationNone, "":
	default:
		bad(KeySSLEndpointIdentification, "%q is not https or none", c.SSLEndpointIdentification)
	}
	if (c.SSLCertificateLocation == "") != (c.SSLKeyLocation == "") {
		bad(KeySSLCertificateLocation, "set both ssl.certificate.location and ssl.key.location for mutual TLS, or neither")
	}
	if c.UsesSASL() {
		switch c.SASLMechanism {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		case "":
			bad(KeySASLMechanism, "required with security.protocol=%s: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.SecurityProtocol)
		default:
			bad(KeySASLMechanism, "%q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", c.SASLMechanism)
		}
		if c.SASLUsername == "" {
			bad(KeySASLUsername, "required with security.protocol=%s", c.SecurityProtocol)
		}
		if c.SASLPasswordFile == "" {
			bad(KeySASLPasswordFile, "required with security.protocol=%s: a file holding the password", c.SecurityProtocol)
		}
	} else if c.SASLMechanism != "" || c.SASLUsername != "" || c.SASLPasswordFile != "" {
		bad(KeySecurityProtocol, "SASL settings are present but security.protocol=%s; use SASL_PLAINTEXT or SASL_SSL", c.SecurityProtocol)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{KeyHeartbeatInterval, c.HeartbeatInterval}, {KeySessionTimeout, c.SessionTimeout},
		{KeyRebalanceTimeout, c.RebalanceTimeout}, {KeyOffsetFlushInterval, c.OffsetFlushInterval},
		{KeyOffsetFlushTimeout, c.OffsetFlushTimeout}, {KeyTaskShutdownGracefulTimeout, c.TaskShutdownGracefulTimeout},
		{KeyTaskLimitsCheckInterval, c.TaskLimitsCheckInterval},
	} {
		if d.v <= 0 {
			bad(d.key, "must be > 0 ms")
		}
	}
	if c.TaskStallTimeout < 0 {
		bad(KeyTaskStallTimeout, "must be >= 0 ms (0 turns stall detection off)")
	}
	if c.ScheduledRebalanceMaxDelay < 0 {
		bad(KeyScheduledRebalanceMaxDelay, "must be >= 0 ms")
	}
	if c.HeartbeatInterval > 0 && c.SessionTimeout > 0 && c.HeartbeatInterval >= c.SessionTimeout {
		bad(KeyHeartbeatInterval, "%d ms must be lower than session.timeout.ms (%d ms), ideally a third of it",
			c.HeartbeatInterval.Milliseconds(), c.SessionTimeout.Milliseconds())
	}
	if c.MaxTasksPerWorker < 0 {
		bad(KeyMaxTasksPerWorker, "must be >= 0 (0 = no cap)")
	}
	for _, k := range []struct{ key, v string }{{KeyKeyConverter, c.KeyConverter}, {KeyValueConverter, c.ValueConverter}} {
		if _, err := converter.Resolve(k.v); err != nil {
			bad(k.key, "%v", err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid worker configuration: %w", errors.Join(errs...))
	}
	return nil
}

func validTopicName(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// OverridePolicy is the policy of connectors' client overrides
// (connector.client.config.override.policy and .allowlist).
func (c *Config) OverridePolicy() (clientconfig.Policy, error) {
	return clientconfig.ParsePolicy(c.ClientOverridePolicy, c.ClientOverrideAllowlist)
}
