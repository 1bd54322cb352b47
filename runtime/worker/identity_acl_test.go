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

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// allow is one ALLOW ACL of a kfake user.
func allow(rt kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, op kmsg.ACLOperation) kfake.ACL {
	return kfake.ACL{Resource: rt, Name: name, Pattern: pattern, Operation: op, Allow: true}
}

// login is the sasl.jaas.config of a PLAIN user.
func login(user, pass string) string {
	return `org.apache.kafka.common.security.plain.PlainLoginModule required username="` + user + `" password="` + pass + `";`
}

// identity gives a connector config its own PLAIN login for its producer,
// consumer and admin clients.
func identity(cfg map[string]string, user, pass string) map[string]string {
	out := maps.Clone(cfg)
	for _, c := range []string{"producer", "consumer", "admin"} {
		out[c+".override.sasl.jaas.config"] = login(user, pass)
	}
	return out
}

// connectorStatus is GET /connectors/{c}/status (nil while it is 404).
func connectorStatus(t *testing.T, w *testWorker, name string) *connectapi.ConnectorStateInfo {
	t.Helper()
	code, body := doAuth(t, w.token, http.MethodGet, w.url+"/connectors/"+name+"/status", nil)
	if code == http.StatusNotFound {
		return nil
	}
	var st connectapi.ConnectorStateInfo
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("status of %s: %d %s", name, code, body)
	}
	return &st
}

// failedWith waits until connector name (or one of its tasks) is FAILED
// with a trace that holds want, and returns that trace.
func failedWith(t *testing.T, w *testWorker, name, want string) string {
	t.Helper()
	var trace string
	testkit.Eventually(t, 15*time.Second, name+" FAILED with "+want, func() (bool, string) {
		st := connectorStatus(t, w, name)
		if st == nil {
			return false, "no status"
		}
		if st.Connector.State == connectapi.StateFailed {
			trace = st.Connector.Trace
		}
		for _, ts := range st.Tasks {
			if ts.State == connectapi.StateFailed {
				trace = ts.Trace
			}
		}
		b, _ := json.Marshal(st)
		return strings.Contains(trace, want), string(b)
	})
	return trace
}

// The ACL layout of docs/connectors/client-overrides.md, on a kfake broker
// with ACLs on: the workers log in as "workers", which alone has ACLs on
// the internal topics (conn-*) and the workers' group, and fences
// exactly-once producers (transactional ids cluster-a-*); an exactly-once
// source connector logs in as "orders" (WRITE and CREATE on orders, WRITE on
// its transactional ids cluster-a-orders-* and its own offsets topic), a sink
// as "billing" (READ on orders, READ on its group connect-billing). Nothing
// in the layout lets the workers' principal touch the connectors' topics, so
// the records that flow show that every client of each connector (the
// transactional producer, the consumer and its group calls, the admin
// look-ups) used the connector's own login.
//
// Then each principal is refused what its ACLs do not give, and the
// broker's authorization error reaches the connector's REST status:
//   - a source writing to a topic outside its ACLs: TOPIC_AUTHORIZATION_FAILED;
//   - a source whose transactional id has no ACL: TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
//   - a sink reading a topic it may only describe: TOPIC_AUTHORIZATION_FAILED;
//   - a sink reading a topic it may not even describe: TOPIC_AUTHORIZATION_FAILED
//     (from the connector's own partition lookup, before any task);
//   - a sink whose connect-<name> group has no ACL: GROUP_AUTHORIZATION_FAILED.
//
// A sink told to read the config topic never reaches the broker: the
// reserved-topic guard refuses the config at creation (400 naming topics),
// so the broker's refusal of the internal topics is shown with the
// connectors' logins directly: their reads and writes of conn-configs fail
// with TOPIC_AUTHORIZATION_FAILED, where the workers' login reads it.
//
// Where kfake differs from Kafka here (none of it changes what is shown):
//   - kfake takes superusers and users from its options (Superuser, User),
//     Kafka from super.users and kafka-acls; ACLs behave the same for the
//     requests used here (Describe implied by Read and Write, prefixed
//     patterns, FindCoordinator needing Describe on the group).
//   - kfake's Metadata auto-creates a topic for a principal that may
//     describe it; Kafka also needs Create on the topic or the cluster. The
//     source's principal gets Create on orders, as Kafka needs, but kfake
//     would create it without.
func TestPerConnectorKafkaIdentitiesUnderACLs(t *testing.T) {
	const (
		lit    = kmsg.ACLResourcePatternTypeLiteral
		prefix = kmsg.ACLResourcePatternTypePrefixed
		topic  = kmsg.ACLResourceTypeTopic
		grp    = kmsg.ACLResourceTypeGroup
		txn    = kmsg.ACLResourceTypeTransactionalId
	)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3),
		kfake.GroupMinSessionTimeout(100*time.Millisecond), kfake.SeedTopics(2, "payroll", "ledger"), kfake.AllowAutoTopicCreation(),
		kfake.EnableSASL(), kfake.EnableACLs(),
		// The test's own observer; no Conveyor client uses it.
		kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("PLAIN", "workers", "workers-pw",
			allow(topic, "conn-", prefix, kmsg.ACLOperationAll),
			allow(grp, "cluster-a", lit, kmsg.ACLOperationRead),
			allow(txn, "cluster-a-", prefix, kmsg.ACLOperationWrite), // fencing
			allow(topic, "orders-src-offsets", lit, kmsg.ACLOperationRead),
			allow(topic, "orders-src-offsets", lit, kmsg.ACLOperationCreate),
			allow(topic, "orders-src-offsets", lit, kmsg.ACLOperationDescribeConfigs)),
		kfake.User("PLAIN", "orders", "orders-pw",
			allow(topic, "orders", lit, kmsg.ACLOperationWrite), allow(topic, "orders", lit, kmsg.ACLOperationCreate),
			allow(txn, "cluster-a-orders-", prefix, kmsg.ACLOperationWrite),
			allow(topic, "orders-src-offsets", lit, kmsg.ACLOperationWrite)),
		kfake.User("PLAIN", "billing", "billing-pw",
			allow(topic, "orders", lit, kmsg.ACLOperationRead),
			allow(topic, "payroll", lit, kmsg.ACLOperationDescribe),
			allow(grp, "connect-billing", prefix, kmsg.ACLOperationRead),
			// Share mode (consumer.group.type=share): its share group, whose
			// start position the task sets (DESCRIBE_CONFIGS, ALTER_CONFIGS).
			allow(grp, "connect-share-billing", prefix, kmsg.ACLOperationRead),
			allow(grp, "connect-share-billing", prefix, kmsg.ACLOperationDescribeConfigs),
			allow(grp, "connect-share-billing", prefix, kmsg.ACLOperationAlterConfigs)),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	kafka := c.ListenAddrs()[0]
	pwFile := filepath.Join(t.TempDir(), "workers-pw")
	if err := os.WriteFile(pwFile, []byte("workers-pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startTestWorker(t, kafka, map[string]string{
		workerconfig.KeySecurityProtocol: "SASL_PLAINTEXT", workerconfig.KeySASLMechanism: "PLAIN",
		workerconfig.KeySASLUsername: "workers", workerconfig.KeySASLPasswordFile: pwFile,
		workerconfig.KeyConfigStorageTopic: "conn-configs", workerconfig.KeyOffsetStorageTopic: "conn-offsets",
		workerconfig.KeyStatusStorageTopic: "conn-status", workerconfig.KeyExactlyOnceSourceSupport: "enabled",
	})
	as := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kafka), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()),
			kgo.RetryTimeout(3 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	// The source writes orders as "orders"; the sink reads them as
	// "billing" into a file.
	out := filepath.Join(t.TempDir(), "billing.txt")
	src := identity(rangeConnector("orders-src", 1), "orders", "orders-pw")
	src["topic"], src["count"], src["rate"] = "orders", "20", "200"
	src["exactly.once.support"], src["offsets.storage.topic"] = "required", "orders-src-offsets"
	sink := identity(map[string]string{"name": "billing", "connector.class": "FileSink", "tasks.max": "1", "topics": "orders", "file": out}, "billing", "billing-pw")
	createConnector(t, w, src)
	// The source's producer asks the broker to create orders, with its
	// own login; then the sink starts with the topic's partitions.
	obs := kadm.NewClient(as("admin", "admin-pw"))
	testkit.Eventually(t, 15*time.Second, "orders created by the source", func() (bool, string) {
		td, err := obs.ListTopics(context.Background(), "orders")
		return err == nil && td["orders"].Err == nil && len(td["orders"].Partitions) > 0, fmt.Sprint(td, err)
	})
	createConnector(t, w, sink)
	took := testkit.Eventually(t, 15*time.Second, "20 records in the billing sink's file", func() (bool, string) {
		b, _ := os.ReadFile(out)
		return strings.Count(string(b), "\n") == 20, string(b)
	})
	t.Logf("records through both connectors' own logins in %v", took.Round(time.Millisecond))
	// The same sink in share mode reads through connect-share-billing-wide
	// with the same login (its ACLs on connect-share-billing*); one whose
	// share group has no ACL fails naming the group's refusal.
	shared := maps.Clone(sink)
	shared["name"], shared["file"], shared["consumer.group.type"], shared["tasks.max"] = "billing-wide", out+".share", "share", "3"
	noShareGroup := maps.Clone(shared)
	noShareGroup["name"], noShareGroup["file"] = "ledger-wide", out+".noshare"
	createConnector(t, w, shared)
	createConnector(t, w, noShareGroup)
	testkit.Eventually(t, 15*time.Second, "20 records in the share-mode sink's file", func() (bool, string) {
		b, _ := os.ReadFile(out + ".share")
		return strings.Count(string(b), "\n") == 20, string(b)
	})
	if trace := failedWith(t, w, "ledger-wide", kerr.GroupAuthorizationFailed.Message); !strings.Contains(trace, "connect-share-ledger-wide") {
		t.Errorf("ledger-wide: the trace %q does not name its share group", trace)
	}
	// The source's transactions wrote its offsets to its own offsets topic.
	testkit.Eventually(t, 10*time.Second, "the source's offsets in orders-src-offsets", func() (bool, string) {
		ends, err := obs.ListEndOffsets(context.Background(), "orders-src-offsets")
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return err == nil && n > 0, fmt.Sprint(n, err)
	})

	// The sink's offsets through REST are read with its own login too (the
	// workers' principal may not read its group).
	testkit.Eventually(t, 10*time.Second, "the billing sink's offsets through REST", func() (bool, string) {
		code, body := doAuth(t, w.token, http.MethodGet, w.url+"/connectors/billing/offsets", nil)
		var offs connectapi.ConnectorOffsets
		_ = json.Unmarshal(body, &offs)
		var n float64
		for _, o := range offs.Offsets {
			at, _ := o.Offset["kafka_offset"].(float64)
			n += at
		}
		// At least the 20 records (transaction markers take offsets too).
		return code == http.StatusOK && n >= 20, fmt.Sprintf("%d %s", code, body)
	})

	// Each connector is refused what its ACLs do not give.
	wrongTopic := maps.Clone(src)
	wrongTopic["name"], wrongTopic["topic"] = "orders-to-payroll", "payroll"
	describeOnly := maps.Clone(sink)
	describeOnly["name"], describeOnly["topics"], describeOnly["file"] = "billing-payroll", "payroll", out+".payroll"
	hidden := maps.Clone(sink)
	hidden["name"], hidden["topics"], hidden["file"] = "billing-ledger", "ledger", out+".ledger"
	noGroup := maps.Clone(sink)
	noGroup["name"], noGroup["file"] = "ledger-orders", out+".nogroup" // its group connect-ledger-orders has no ACL
	wrongTxn := maps.Clone(src)
	wrongTxn["name"] = "ledger-src" // its transactional id cluster-a-ledger-src-0 has no ACL
	for _, cfg := range []map[string]string{wrongTopic, wrongTxn, describeOnly, hidden, noGroup} {
		createConnector(t, w, cfg)
	}
	for name, want := range map[string][]string{
		"orders-to-payroll": {kerr.TopicAuthorizationFailed.Message, "payroll"},
		"ledger-src":        {kerr.TransactionalIDAuthorizationFailed.Message, `"cluster-a-ledger-src-0"`, "producer.override.sasl.jaas.config"},
		"billing-payroll":   {kerr.TopicAuthorizationFailed.Message},
		"billing-ledger":    {kerr.TopicAuthorizationFailed.Message, "reading partition counts of [ledger]"},
		"ledger-orders":     {kerr.GroupAuthorizationFailed.Message},
	} {
		trace := failedWith(t, w, name, want[0])
		for _, m := range want[1:] {
			if !strings.Contains(trace, m) {
				t.Errorf("%s: the trace %q does not name %s", name, trace, m)
			}
		}
		if strings.Contains(trace, "-pw") {
			t.Errorf("%s: the trace shows a password: %s", name, trace)
		}
	}
	// Its offsets through REST: the broker refuses its login the group, and
	// the answer says so (403, not a server error).
	if code, body := doAuth(t, w.token, http.MethodGet, w.url+"/connectors/ledger-orders/offsets", nil); code != http.StatusForbidden ||
		!strings.Contains(string(body), kerr.GroupAuthorizationFailed.Message) {
		t.Errorf("offsets of ledger-orders (no group ACL): %d %s, want 403 naming %s", code, body, kerr.GroupAuthorizationFailed.Message)
	}
	for _, f := range []string{".payroll", ".ledger", ".nogroup"} {
		if b, _ := os.ReadFile(out + f); len(b) > 0 {
			t.Errorf("%s: a refused sink wrote %q", f, b)
		}
	}

	// A sink told to read the config topic is refused before the broker is
	// asked: the guard names the key.
	evil := maps.Clone(sink)
	evil["name"], evil["topics"] = "billing-configs", "conn-configs"
	code, body := doAuth(t, w.token, http.MethodPost, w.url+"/connectors", map[string]any{"name": "billing-configs", "config": evil})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "topics") || !strings.Contains(string(body), "conn-configs") {
		t.Fatalf("a sink of the config topic: %d %s, want 400 naming topics and conn-configs", code, body)
	}

	// The broker is the backstop: only the workers' login reaches the
	// internal topics.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, internal := range []string{"conn-configs", "conn-offsets", "conn-status"} {
		for _, u := range []struct{ user, pass string }{{"orders", "orders-pw"}, {"billing", "billing-pw"}} {
			rd := as(u.user, u.pass, kgo.ConsumeTopics(internal), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			f := rd.PollFetches(ctx)
			if err := f.Err0(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Errorf("%s reading %s: %v (%d records), want TOPIC_AUTHORIZATION_FAILED", u.user, internal, err, f.NumRecords())
			}
			err := as(u.user, u.pass).ProduceSync(ctx, &kgo.Record{Topic: internal, Value: []byte("x")}).FirstErr()
			if !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Errorf("%s writing %s: %v, want TOPIC_AUTHORIZATION_FAILED", u.user, internal, err)
			}
		}
	}
	rd := as("workers", "workers-pw", kgo.ConsumeTopics("conn-configs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if f := rd.PollFetches(ctx); f.Err0() != nil || f.NumRecords() == 0 {
		t.Errorf("the workers reading conn-configs: %v, %d records", f.Err0(), f.NumRecords())
	}
}
