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

package clientconfig

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// One override of every property of the table, for every client it
// applies to, with a good value.
func everyOverride() map[string]string {
	good := map[string]string{"acks": "1", "auto.offset.reset": "latest", "batch.size": "16384", "client.id": "c",
		"compression.type": "lz4", "enable.idempotence": "false", "enable.metrics.push": "true", "fetch.max.bytes": "2048", "fetch.max.wait.ms": "10",
		"fetch.min.bytes": "1", "heartbeat.interval.ms": "100", "isolation.level": "read_committed", "linger.ms": "5",
		"max.in.flight.requests.per.connection": "2", "max.partition.fetch.bytes": "1024", "max.poll.interval.ms": "1000",
		"max.poll.records": "10", "max.request.size": "1048576", "rebalance.timeout.ms": "1000", "request.timeout.ms": "1000",
		"retries": "3", "sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`,
		"sasl.mechanism": "PLAIN", "security.protocol": "SASL_SSL", "session.timeout.ms": "6000"}
	out := map[string]string{}
	for _, p := range properties {
		v, ok := good[p.Name]
		if !ok {
			panic("no good value for " + p.Name)
		}
		for _, k := range Kinds {
			if p.Kinds&k != 0 {
				out[k.OverridePrefix()+p.Name] = v
			}
		}
	}
	return out
}

// The policies of Kafka 4.x: None refuses every override, Principal only
// the SASL keys, All every property of the table, Allowlist exactly the
// listed ones; every refusal names the key and the policy.
func TestPolicies(t *testing.T) {
	all := everyOverride()
	principal := []string{"security.protocol", "sasl.mechanism", "sasl.jaas.config"}
	for _, tc := range []struct {
		policy    string
		allowlist []string
		allowed   func(name string) bool
	}{
		{PolicyNone, nil, func(string) bool { return false }},
		{PolicyPrincipal, nil, func(n string) bool { return slices.Contains(principal, n) }},
		{PolicyAll, nil, func(string) bool { return true }},
		{"", nil, func(string) bool { return true }}, // Kafka 4.x's default: All
		{PolicyAllowlist, nil, func(string) bool { return false }},
		{PolicyAllowlist, []string{"linger.ms", "max.poll.records", "sasl.jaas.config"}, func(n string) bool {
			return slices.Contains([]string{"linger.ms", "max.poll.records", "sasl.jaas.config"}, n)
		}},
		{"org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy", nil, func(string) bool { return false }},
	} {
		p, err := ParsePolicy(tc.policy, tc.allowlist)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.policy, tc.allowlist, err)
		}
		refused := map[string]string{}
		for _, e := range Check(all, p, nil) {
			refused[e.Key] = e.Message
		}
		for key := range all {
			_, name, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(key, "producer."), "consumer."), "admin."), ".")
			msg, isRefused := refused[key]
			if tc.allowed(name) == isRefused {
				t.Errorf("policy %q %v: %s refused=%v (%s), want refused=%v", tc.policy, tc.allowlist, key, isRefused, msg, !tc.allowed(name))
				continue
			}
			if isRefused && (!strings.Contains(msg, `"`+key+`"`) || !strings.Contains(msg, `"`+p.Name+`" policy`) || !strings.Contains(msg, KeyPolicy)) {
				t.Errorf("refusal of %s names neither the key nor the policy %s: %s", key, p.Name, msg)
			}
		}
		// Whatever is allowed must also be accepted at task start.
		for _, kind := range Kinds {
			over := Overrides(kind, all)
			allowed := map[string]string{}
			for n, v := range over {
				if tc.allowed(n) {
					allowed[n] = v
				}
			}
			cfg := map[string]string{}
			for n, v := range allowed {
				cfg[kind.OverridePrefix()+n] = v
			}
			if _, err := For(kind, nil, cfg, p); err != nil {
				t.Errorf("policy %q: %s overrides refused at start: %v", tc.policy, kind, err)
			}
		}
	}
}

func TestParsePolicyRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allowlist []string
		want      string
	}{
		{"Some", nil, KeyPolicy + `="Some": use None, Principal, All, Allowlist`},
		{"All", []string{"linger.ms"}, KeyAllowlist + " is set but " + KeyPolicy + "=All does not read it"},
		{"Allowlist", []string{"linger.ms", "lingers.ms"}, KeyAllowlist + `: "lingers.ms" is not a client property Conveyor supports`},
	} {
		if _, err := ParsePolicy(tc.name, tc.allowlist); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.name, tc.allowlist, err, tc.want)
		}
	}
}

// An override the table does not have, one for another client, and a bad
// value are each refused naming the key; a password is never shown.
func TestCheckNamesEveryBadKey(t *testing.T) {
	got := Check(map[string]string{
		"producer.override.linger.msx":         "5",
		"consumer.override.linger.ms":          "5",
		"producer.override.acks":               "2",
		"consumer.override.max.poll.records":   "0",
		"admin.override.sasl.jaas.config":      `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="hunter2"`,
		"producer.override.enable.idempotence": "true",
		"producer.override.retries":            "1",
		"topics":                               "not an override",
	}, Policy{}, nil)
	want := map[string]string{
		"admin.override.sasl.jaas.config":    "must end with ';'",
		"consumer.override.linger.ms":        "linger.ms applies to the producer client(s), not the consumer",
		"consumer.override.max.poll.records": `"0" is not a whole number from 1`,
		"producer.override.acks":             `"2" is not one of all, -1, 1, 0`,
		"producer.override.linger.msx":       "linger.msx is not a producer property Conveyor supports; supported: acks, batch.size",
	}
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key)
		if strings.Contains(e.Message, "hunter2") {
			t.Errorf("%s: the message shows the password: %s", e.Key, e.Message)
		}
		if w, ok := want[e.Key]; !ok || !strings.Contains(e.Message, w) {
			t.Errorf("%s: %q, want one containing %q", e.Key, e.Message, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems with %v, want exactly %d keys", keys, len(want))
	}
	// Conflicts between good values of one client.
	for _, tc := range []struct{ key, value, other, otherValue, want string }{
		{"producer.override.acks", "1", "producer.override.enable.idempotence", "true", "idempotent writes need acks=all, but producer.override.acks=1"},
		{"producer.override.max.in.flight.requests.per.connection", "6", "producer.override.acks", "all", "6 is more than 5"},
		{"consumer.override.sasl.mechanism", "SCRAM-SHA-256", "consumer.override.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`,
			`"SCRAM-SHA-256" does not fit the login module`},
		{"consumer.override.security.protocol", "SSL", "consumer.override.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="hunter2";`,
			"consumer.override.sasl.jaas.config is set but security.protocol=SSL does not use SASL"},
	} {
		errs := Check(map[string]string{tc.key: tc.value, tc.other: tc.otherValue}, Policy{}, nil)
		if len(errs) != 1 || !strings.Contains(errs[0].Message, tc.want) {
			t.Errorf("%s=%s with %s=%s: %v, want one problem containing %q", tc.key, tc.value, tc.other, tc.otherValue, errs, tc.want)
		}
	}
}

// Every property names the franz-go option it maps to and says what it
// does; the table is sorted so Lookup finds every row.
func TestTableIsComplete(t *testing.T) {
	for i, p := range properties {
		if p.Option == "" || p.Doc == "" || p.apply == nil || p.Kinds == 0 {
			t.Errorf("%s: option %q, doc %q, apply %v, kinds %v", p.Name, p.Option, p.Doc, p.apply != nil, p.Kinds)
		}
		if got, ok := Lookup(p.Name); !ok || got.Name != p.Name {
			t.Errorf("Lookup(%s) misses row %d", p.Name, i)
		}
	}
}

// The documentation's table names every property of this one.
func TestDocsListEveryProperty(t *testing.T) {
	doc, err := os.ReadFile("../../docs/connectors/client-overrides.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range properties {
		if !strings.Contains(string(doc), "| `"+p.Name+"`") && !strings.Contains(string(doc), ", `"+p.Name+"` |") {
			t.Errorf("docs/connectors/client-overrides.md has no row for %s", p.Name)
		}
	}
}

// Against a known worker: a connector's own login on a worker without SASL
// needs security.protocol too; with a worker's SASL login the login alone
// will do, and a SCRAM login needs a fitting mechanism.
func TestCheckAgainstTheWorkersSecurity(t *testing.T) {
	plainJAAS := `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`
	scramJAAS := `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`
	plaintext := &Security{Protocol: ProtocolPlaintext}
	saslPlain := &Security{Protocol: ProtocolSASLSSL, Mechanism: MechanismPlain, User: "worker"}
	for _, tc := range []struct {
		worker *Security
		config map[string]string
		want   string // "" = accepted
	}{
		{plaintext, map[string]string{"producer.override.sasl.jaas.config": plainJAAS}, "producer.override.sasl.jaas.config is set but security.protocol=PLAINTEXT does not use SASL"},
		{plaintext, map[string]string{"producer.override.sasl.jaas.config": plainJAAS, "producer.override.security.protocol": "SASL_PLAINTEXT"}, ""},
		{plaintext, map[string]string{"producer.override.security.protocol": "SASL_PLAINTEXT"}, "needs a SASL login and the worker has none"},
		{saslPlain, map[string]string{"consumer.override.sasl.jaas.config": plainJAAS}, ""},
		{saslPlain, map[string]string{"consumer.override.sasl.jaas.config": scramJAAS}, `"PLAIN" does not fit the login module`},
		{saslPlain, map[string]string{"consumer.override.sasl.jaas.config": scramJAAS, "consumer.override.sasl.mechanism": "SCRAM-SHA-256"}, ""},
	} {
		errs := Check(tc.config, Policy{}, tc.worker)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%v on %+v: refused: %v", tc.config, *tc.worker, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Message, tc.want)):
			t.Errorf("%v on %+v: %v, want one problem containing %q", tc.config, *tc.worker, errs, tc.want)
		}
	}
}

// A connector stored before its cluster's policy changed is refused when
// its tasks start, naming the key and the policy.
func TestForRefusesAtTaskStart(t *testing.T) {
	none, _ := ParsePolicy(PolicyNone, nil)
	_, err := For(Producer, map[string]string{"linger.ms": "5"}, map[string]string{"producer.override.linger.ms": "50"}, none)
	if err == nil || !strings.Contains(err.Error(), `"producer.override.linger.ms"`) || !strings.Contains(err.Error(), `"None" policy`) {
		t.Fatalf("refused override at start: %v, want an error naming the key and the policy", err)
	}
	// The worker's own settings are not overrides: None leaves them alone.
	s, err := For(Producer, map[string]string{"linger.ms": "5"}, map[string]string{}, none)
	if err != nil || len(s.Opts) == 0 {
		t.Fatalf("the worker's settings under None: %v, %d options", err, len(s.Opts))
	}
}

// IsRefused tells the broker's refusals of a principal, however wrapped
// (franz-go wraps a group's in kgo.ErrGroupSession), from errors that
// retrying may mend.
func TestIsRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kerr.TopicAuthorizationFailed, true},
		{fmt.Errorf("consuming: %w", &kgo.ErrGroupSession{Err: kerr.GroupAuthorizationFailed}), true},
		{fmt.Errorf("init: %w", kerr.TransactionalIDAuthorizationFailed), true},
		{kerr.ClusterAuthorizationFailed, true},
		{kerr.SaslAuthenticationFailed, true},
		{kerr.UnknownTopicOrPartition, false},
		{&kgo.ErrGroupSession{Err: kerr.RebalanceInProgress}, false},
		{errors.New("TOPIC_AUTHORIZATION_FAILED"), false}, // text is not the error
		{nil, false},
	} {
		if got := IsRefused(tc.err); got != tc.want {
			t.Errorf("IsRefused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
