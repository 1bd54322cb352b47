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
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

func TestDefaults(t *testing.T) {
	c := Default()
	if c.RestPort != 8083 || c.ConfigStorageTopic != "connect-configs" || c.OffsetStoragePartitions != 25 ||
		c.StatusStoragePartitions != 5 || c.InternalTopicsCreate || c.SecurityProtocol != ProtocolPlaintext ||
		c.ScheduledRebalanceMaxDelay != 5*time.Second || c.SessionTimeout != 10*time.Second ||
		c.TaskLimitsCheckInterval != 30*time.Second || c.ClientRack != "" ||
		!c.VerifiesBrokerHostName() || !c.SSLCertificateVerification {
		t.Fatalf("%+v", c)
	}
	// Every field has docs, and every default parses.
	for _, f := range Fields() {
		if f.Doc == "" {
			t.Errorf("%s has no doc", f.Key)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.properties")
	content := `# worker
bootstrap.servers = kafka-0:9092, kafka-1:9092
group.id=prod.connect
offset.storage.partitions=50
internal.topics.create=true
rest.port=18083
security.protocol=SASL_SSL
ssl.ca.location=/etc/kafka/ca.crt
sasl.mechanism=SCRAM-SHA-512
sasl.username=connect
sasl.password.file=/etc/kafka/password
scheduled.rebalance.max.delay.ms=2500
ssl.endpoint.identification.algorithm=
client.rack=zone-a
task.limits.check.interval.ms=500
producer.linger.ms=5
value.converter.schemas.enable=false
typo.key=1
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPodIP, "10.1.2.3")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.BootstrapServers, []string{"kafka-0:9092", "kafka-1:9092"}) || c.GroupID != "prod.connect" ||
		c.OffsetStoragePartitions != 50 || !c.InternalTopicsCreate || c.RestPort != 18083 || !c.UsesTLS() || !c.UsesSASL() ||
		c.ScheduledRebalanceMaxDelay != 2500*time.Millisecond || c.VerifiesBrokerHostName() || !c.SSLCertificateVerification ||
		c.ClientRack != "zone-a" || c.TaskLimitsCheckInterval != 500*time.Millisecond {
		t.Fatalf("%+v", c)
	}
	if c.AdvertisedURL() != "http://10.1.2.3:18083" || c.EffectiveWorkerID() != "10.1.2.3:18083" {
		t.Fatal(c.AdvertisedURL(), c.EffectiveWorkerID())
	}
	if c.Prefixed("producer.")["linger.ms"] != "5" {
		t.Fatal(c.Prefixed("producer."))
	}
	if c.ConverterConfig()["value.converter.schemas.enable"] != "false" {
		t.Fatal(c.ConverterConfig())
	}
	if got := c.UnknownKeys(); !reflect.DeepEqual(got, []string{"typo.key"}) {
		t.Fatal(got)
	}
}

func TestValidateErrors(t *testing.T) {
	base := func() *Config {
		c := Default()
		c.BootstrapServers = []string{"localhost:9092"}
		c.GroupID = "g"
		return c
	}
	if err := base().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"missing required", func(c *Config) { c.BootstrapServers = nil; c.GroupID = " " },
			[]string{"bootstrap.servers: required", "group.id: required"}},
		{"bad broker", func(c *Config) { c.BootstrapServers = []string{"nohost", "h:99999"} },
			[]string{`"nohost" is not host:port`, `"h:99999" has an invalid port`}},
		{"topics", func(c *Config) { c.OffsetStorageTopic = c.ConfigStorageTopic; c.StatusStorageTopic = "bad name" },
			[]string{"offset.storage.topic: topic \"connect-configs\" is also used", "status.storage.topic: \"bad name\" is not a valid topic name"}},
		{"replication", func(c *Config) { c.ConfigStorageReplicationFactor = 0; c.StatusStoragePartitions = -2 },
			[]string{"config.storage.replication.factor: 0 is invalid", "status.storage.partitions: -2 is invalid"}},
		{"ports", func(c *Config) { c.RestPort = 70000; c.MetricsPort = 70000 },
			[]string{"rest.port: 70000 is not a port", "metrics.port: 70000"}},
		{"same metrics port", func(c *Config) { c.MetricsPort = 8083 }, []string{"metrics.port: 8083 is also rest.port"}},
		{"protocol", func(c *Config) { c.SecurityProtocol = "TLS" }, []string{`security.protocol: "TLS" is not one of`}},
		{"ssl without tls", func(c *Config) { c.SSLCALocation = "/ca" }, []string{"ssl.ca.location: is set but security.protocol=PLAINTEXT"}},
		{"host name check without tls", func(c *Config) { c.SSLEndpointIdentification = EndpointIdentificationNone },
			[]string{"ssl.endpoint.identification.algorithm: is set but security.protocol=PLAINTEXT"}},
		{"verification off without tls", func(c *Config) { c.SSLCertificateVerification = false },
			[]string{"enable.ssl.certificate.verification: is set but security.protocol=PLAINTEXT"}},
		{"unknown identification algorithm", func(c *Config) { c.SecurityProtocol = ProtocolSSL; c.SSLEndpointIdentification = "dns" },
			[]string{`ssl.endpoint.identification.algorithm: "dns" is not https or none`}},
		{"limits interval", func(c *Config) { c.TaskLimitsCheckInterval = 0 }, []string{"task.limits.check.interval.ms: must be > 0"}},
		{"half mtls", func(c *Config) { c.SecurityProtocol = ProtocolSSL; c.SSLKeyLocation = "/k" }, []string{"ssl.certificate.location: set both"}},
		{"sasl incomplete", func(c *Config) { c.SecurityProtocol = ProtocolSASLPlaintext },
			[]string{"sasl.mechanism: required", "sasl.username: required", "sasl.password.file: required"}},
		{"sasl bad mech", func(c *Config) {
			c.SecurityProtocol = ProtocolSASLPlaintext
			c.SASLMechanism = "GSSAPI"
			c.SASLUsername = "u"
			c.SASLPasswordFile = "/p"
		}, []string{`sasl.mechanism: "GSSAPI" is not one of`}},
		{"sasl without protocol", func(c *Config) { c.SASLUsername = "u" }, []string{"SASL settings are present"}},
		{"timeouts", func(c *Config) {
			c.HeartbeatInterval = 20 * time.Second
			c.OffsetFlushInterval = 0
			c.ScheduledRebalanceMaxDelay = -1
		},
			[]string{"heartbeat.interval.ms: 20000 ms must be lower than session.timeout.ms", "offset.flush.interval.ms: must be > 0", "scheduled.rebalance.max.delay.ms: must be >= 0"}},
		{"max tasks", func(c *Config) { c.MaxTasksPerWorker = -1 }, []string{"max.tasks.per.worker: must be >= 0"}},
		{"converter", func(c *Config) { c.ValueConverter = "com.example.NoSuchConverter" }, []string{"value.converter: unknown converter class"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mutate(c)
			err := c.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	_, err := Parse(map[string]string{"rest.port": "http", "internal.topics.create": "yes", "session.timeout.ms": "10s", "offset.storage.replication.factor": "100000"})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{`rest.port="http"`, `internal.topics.create="yes"`, `session.timeout.ms="10s"`, `offset.storage.replication.factor="100000"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}

func TestRenderGoldenAndRoundTrip(t *testing.T) {
	c := Default()
	c.BootstrapServers = []string{"kafka-bootstrap.kafka:9093"}
	c.GroupID = "team-a.pipeline"
	c.ConfigStorageTopic = "pipeline-configs"
	c.OffsetStorageReplicationFactor = 3
	c.RestAuthTokenFile = "/var/run/conveyor/rest/token"
	c.SecurityProtocol = ProtocolSSL
	c.SSLCALocation = "/var/run/conveyor/kafka/ca.crt"
	c.SSLCertificateLocation = "/var/run/conveyor/kafka/tls.crt"
	c.SSLKeyLocation = "/var/run/conveyor/kafka/tls.key"
	c.SSLEndpointIdentification = EndpointIdentificationNone
	c.ClientRack = "eu-west-1a"
	c.TaskLimitsCheckInterval = 10 * time.Second
	c.ScheduledRebalanceMaxDelay = 3 * time.Second
	c.MaxTasksPerWorker = 8
	c.Extra["producer.compression.type"] = "zstd"
	c.Extra["consumer.max.poll.records"] = "1000"
	c.Extra["value.converter.schemas.enable"] = "false"
	c.Extra["odd key"] = "value with = sign\nand newline"
	got := c.Render()
	testkit.Golden(t, "testdata/render.properties", got)

	for i := 0; i < 3; i++ { // rendering is stable
		if !bytes.Equal(c.Render(), got) {
			t.Fatal("unstable render")
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "w.properties")
	if err := os.WriteFile(path, got, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	back.RestAdvertisedHostName = c.RestAdvertisedHostName // Load applies $POD_IP
	back.RestHostName = c.RestHostName
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip differs:\n%+v\n%+v", back, c)
	}
}

func TestHelpText(t *testing.T) {
	h := HelpText()
	for _, f := range Fields() {
		if !strings.Contains(h, "  "+f.Key+" (default ") {
			t.Fatalf("help lacks %s", f.Key)
		}
	}
	if !strings.Contains(h, "rest.port (default 8083)") || !strings.Contains(h, "group.id (default (none))") {
		t.Fatal(h)
	}
}

func TestApplyEnvListensOnPodIP(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c := Default()
	c.ApplyEnv(env(map[string]string{EnvPodIP: " 10.0.0.7 "}))
	if got := c.RestListenAddress(); got != "10.0.0.7:8083" {
		t.Errorf("with POD_IP: listen %s, want 10.0.0.7:8083", got)
	}
	if got := c.AdvertisedURL(); got != "http://10.0.0.7:8083" {
		t.Errorf("with POD_IP: advertised %s", got)
	}
	c = Default()
	c.RestHostName = "0.0.0.0"
	c.ApplyEnv(env(map[string]string{EnvPodIP: "10.0.0.7"}))
	if got := c.RestListenAddress(); got != "0.0.0.0:8083" {
		t.Errorf("an explicit rest.host.name must win over POD_IP: listen %s", got)
	}
	c = Default()
	c.ApplyEnv(env(nil))
	if got := c.RestListenAddress(); got != ":8083" {
		t.Errorf("without POD_IP: listen %s, want all interfaces", got)
	}
}

// The pod's pod-template-hash, which the operator passes as
// POD_TEMPLATE_HASH, becomes worker.revision unless the key is set.
func TestApplyEnvTakesTheRevision(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c := Default()
	c.ApplyEnv(env(map[string]string{EnvRevision: " 7d9f8c6b5 "}))
	if c.Revision != "7d9f8c6b5" {
		t.Errorf("worker.revision %q from %s, want 7d9f8c6b5", c.Revision, EnvRevision)
	}
	c = Default()
	c.Revision = "mine"
	c.ApplyEnv(env(map[string]string{EnvRevision: "7d9f8c6b5"}))
	if c.Revision != "mine" {
		t.Errorf("worker.revision %q: the key must win over %s", c.Revision, EnvRevision)
	}
}
