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

package task

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/kafkatest"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// saslCluster is a kfake broker that takes only SASL logins: the worker's
// (admin, PLAIN) and two connector users, alice (PLAIN) and carol
// (SCRAM-SHA-512). It returns the worker's connection to it.
func saslCluster(t *testing.T, topics ...string) (*kfake.Cluster, *clientconfig.Connection) {
	t.Helper()
	opts := []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.Superuser("PLAIN", "alice", "alice-pw"), kfake.Superuser("SCRAM-SHA-512", "carol", "carol-pw")}
	for _, tp := range topics {
		opts = append(opts, kfake.SeedTopics(1, tp))
	}
	c, _ := kafkatest.Cluster(t, opts...)
	return c, &clientconfig.Connection{Base: kafkaOpts(c), Security: clientconfig.Security{Protocol: clientconfig.ProtocolSASLPlaintext,
		Mechanism: clientconfig.MechanismPlain, User: "admin", Pass: "admin-pw"}}
}

func saslSpec(t *testing.T, c *kfake.Cluster, conn *clientconfig.Connection, id ID) Spec {
	t.Helper()
	s := spec(c, id)
	kopts, err := conn.For(clientconfig.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	s.Kafka, s.Connection = kopts, conn
	s.WorkerConverters = map[string]string{"key.converter": converter.StringClass, "value.converter": converter.StringClass}
	return s
}

func plainLogin(user, pass string) string {
	return `org.apache.kafka.common.security.plain.PlainLoginModule required username="` + user + `" password="` + pass + `";`
}

// A connector's security.protocol, sasl.mechanism and sasl.jaas.config
// overrides give its producer, consumer and admin client their own login:
// with its user's password each works; with a wrong password it does not,
// although the worker's own login (which the client would use if the
// override were dropped) is good.
func TestClientOverrideIdentity(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		works     bool
	}{
		{"consumer PLAIN", map[string]string{"consumer.override.sasl.jaas.config": plainLogin("alice", "alice-pw")}, true},
		{"consumer PLAIN wrong password", map[string]string{"consumer.override.sasl.jaas.config": plainLogin("alice", "nope")}, false},
		{"consumer SCRAM", map[string]string{"consumer.override.sasl.mechanism": "SCRAM-SHA-512",
			"consumer.override.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" password="carol-pw";`}, true},
		{"consumer SCRAM wrong mechanism", map[string]string{"consumer.override.sasl.mechanism": "SCRAM-SHA-256",
			"consumer.override.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" password="carol-pw";`}, false},
		{"consumer without SASL", map[string]string{"consumer.override.security.protocol": "PLAINTEXT"}, false},
		{"consumer SASL_PLAINTEXT", map[string]string{"consumer.override.security.protocol": "SASL_PLAINTEXT",
			"consumer.override.sasl.jaas.config": plainLogin("alice", "alice-pw")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, conn := saslCluster(t, "in")
			produceWith(t, conn, "in", 10)
			rec := newRecordingSink()
			s := saslSpec(t, c, conn, ID{"snk", 0})
			s.Plugin = plugin.Plugin{Class: "test.Sink", Kind: plugin.KindSink, NewSinkTask: func() plugin.SinkTask { return rec }}
			s.Connector = map[string]string{"topics": "in"}
			for k, v := range tc.overrides {
				s.Connector[k] = v
			}
			r, err := New(s)
			if tc.works {
				tasktest.Start(t, r, err)
				testkit.EventuallyTrue(t, 15*time.Second, "10 records put", func() bool { return rec.total() == 10 })
				return
			}
			tasktest.StartMayFail(t, r, err)
			// Nothing may be read within 3 s: the failed login keeps the
			// consumer out (the worker's good login would read all 10 at
			// once).
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				if n := rec.total(); n > 0 {
					t.Fatalf("%d records put through a login that should fail", n)
				}
				time.Sleep(50 * time.Millisecond) // polling the sink for the whole window is the observation
			}
		})
	}
	for _, works := range []bool{true, false} {
		pass := "alice-pw"
		if !works {
			pass = "nope"
		}
		t.Run("producer alice "+pass, func(t *testing.T) {
			c, conn := saslCluster(t, "out")
			src := &counterSource{topic: "out", limit: 10, batch: 10}
			s := saslSpec(t, c, conn, ID{"src", 0})
			s.Plugin = plugin.Plugin{Class: "test.Source", Kind: plugin.KindSource, NewSourceTask: func() plugin.SourceTask { return src }}
			s.Connector = map[string]string{"producer.override.sasl.jaas.config": plainLogin("alice", pass)}
			s.Offsets = newMemOffsets()
			r, err := New(s)
			if works {
				tasktest.Start(t, r, err)
				testkit.EventuallyTrue(t, 15*time.Second, "10 records acknowledged", func() bool { return src.committedCount() == 10 })
				return
			}
			tasktest.StartMayFail(t, r, err)
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				if n := src.committedCount(); n > 0 {
					t.Fatalf("%d records acknowledged through a login that should fail", n)
				}
				time.Sleep(50 * time.Millisecond) // polling the source for the whole window is the observation
			}
		})
		t.Run("admin alice "+pass, func(t *testing.T) {
			// The dead letter queue's topic is looked up and created by the
			// admin client: a failed login fails the task at its start.
			c, conn := saslCluster(t, "in")
			st := newStatuses()
			s := saslSpec(t, c, conn, ID{"snk", 0})
			s.Status = st
			s.Plugin = plugin.Plugin{Class: "test.Sink", Kind: plugin.KindSink, NewSinkTask: func() plugin.SinkTask { return newRecordingSink() }}
			s.Connector = map[string]string{"topics": "in", plugin.KeyDLQTopicName: "dlq", plugin.KeyDLQReplication: "1",
				"admin.override.sasl.jaas.config": plainLogin("alice", pass)}
			r, err := New(s)
			if works {
				tasktest.Start(t, r, err)
				testkit.EventuallyTrue(t, 15*time.Second, "the dead letter queue topic created", func() bool {
					topics, err := kafkatest.Admin(t, append(kafkaOpts(c), kgo.SASL(plainMech("admin", "admin-pw")))).ListTopics(t.Context(), "dlq")
					return err == nil && topics.Has("dlq") && topics["dlq"].Err == nil
				})
				return
			}
			tasktest.StartMayFail(t, r, err)
			testkit.EventuallyTrue(t, 70*time.Second, "the task failed at its admin login", func() bool {
				return st.last(ID{"snk", 0}) == StateFailed && strings.Contains(st.trace(ID{"snk", 0}), "dead letter queue")
			})
		})
	}
}

func plainMech(user, pass string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: pass}.AsMechanism()
}

// produceWith writes n records to topic through the worker's connection.
func produceWith(t *testing.T, conn *clientconfig.Connection, topic string, n int) {
	t.Helper()
	opts, err := conn.For(clientconfig.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("producing to %s: %v", topic, err)
		}
	}
}
