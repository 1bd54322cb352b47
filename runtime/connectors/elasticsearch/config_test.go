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

package elasticsearch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/plugin/sinkwriter"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/estest"
)

// Bad settings are refused naming the key and the fix; secrets never show
// in the message. Validate reaches the server (the stand-in, with
// authentication on) and names the credentials it refused.
func TestStandinValidate(t *testing.T) {
	es, err := estest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	es.Username, es.Password = "writer", "Right-Pw-1"
	base := func(kv ...string) map[string]string {
		cfg := map[string]string{"name": "es", "connector.class": "ElasticsearchSink", "topics": "orders", KeyURL: es.URL,
			KeyUsername: "writer", KeyPassword: "Right-Pw-1"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(cfg, kv[i])
				continue
			}
			cfg[kv[i]] = kv[i+1]
		}
		return cfg
	}
	cases := []struct {
		name, field, substr string
		cfg                 map[string]string
	}{
		{"url with credentials", KeyURL, "holds credentials: put them in connection.username", base(KeyURL, "http://u:Secret-Pw-3@127.0.0.1:9200")},
		{"not a url", KeyURL, "is not an http:// or https:// URL", base(KeyURL, "es.example:9200")},
		{"user without password", KeyPassword, "set both for Basic authentication", base(KeyPassword, "")},
		{"api key and user", KeyAPIKey, "not both", base(KeyAPIKey, "aWQ6a2V5")},
		{"delete with key.ignore", KeyNullValues, "delete needs key.ignore=false", base(KeyKeyIgnore, "true", KeyNullValues, "delete")},
		{"buffer under batch", KeyMaxBuffered, "less than batch.size", base(KeyBatchSize, "500", KeyMaxBuffered, "100")},
		{"bad index", KeyIndexFormat, "starts with -, _ or +", base(KeyIndexFormat, "_${topic}")},
		{"bad behavior", KeyMalformed, "must be one of", base(KeyMalformed, "drop")},
		{"missing CA", KeyCAFile, "reading the CA file", base(KeyCAFile, "/nonexistent/ca.pem")},
		{"cert without key", KeyKeyFile, "set both connection.cert.file and connection.key.file", base(KeyCertFile, "/tmp/c.pem")},
		{"wrong password", KeyUsername, "refused the credentials (status 401: security_exception", base(KeyPassword, "Wrong-Pw-2")},
		{"unreachable", KeyURL, "reaching the server", base(KeyURL, "http://127.0.0.1:1")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := plugin.ValidateConfig(context.Background(), Plugin(), c.cfg).Errors()
			found := false
			for _, fe := range errs {
				if strings.Contains(fe.Message, "Secret-Pw-3") || strings.Contains(fe.Message, "Wrong-Pw-2") || strings.Contains(fe.Message, "Right-Pw-1") {
					t.Errorf("a secret in %v", fe)
				}
				found = found || (fe.Name == c.field && strings.Contains(fe.Message, c.substr))
			}
			if !found {
				t.Errorf("errors %v, want one on %s containing %q", errs, c.field, c.substr)
			}
		})
	}
	if errs := plugin.ValidateConfig(context.Background(), Plugin(), base()).Errors(); len(errs) > 0 {
		t.Errorf("a good config: %v", errs)
	}
}

// build renders each kind of record as its _bulk lines, or says why it
// cannot.
func TestBuild(t *testing.T) {
	s, err := parse(map[string]string{KeyURL: "http://127.0.0.1:9200", KeyNullValues: BehaviorDelete})
	if err != nil {
		t.Fatal(err)
	}
	price, err := data.ParseDecimal("1.50")
	if err != nil {
		t.Fatal(err)
	}
	schema := data.StructOf("v", data.F("id", data.Int64Schema), data.F("price", data.DecimalSchema(2)))
	cases := []struct {
		name string
		rec  plugin.SinkRecord
		want string // lines, or the error's substring after "error: "
	}{
		{"string key, JSON text", plugin.SinkRecord{Topic: "Orders", Offset: 7, Key: "k1", Value: `{"a":1}`},
			`{"index":{"_index":"orders","_id":"k1","version":7,"version_type":"external"}}` + "\n" + `{"a":1}` + "\n"},
		{"int key, struct", plugin.SinkRecord{Topic: "o", Offset: 8, Key: int64(42), ValueSchema: schema,
			Value: data.NewStruct(schema).Put("id", int64(42)).Put("price", price)},
			`{"index":{"_index":"o","_id":"42","version":8,"version_type":"external"}}` + "\n" + `{"id":42,"price":1.50}` + "\n"},
		{"tombstone", plugin.SinkRecord{Topic: "o", Offset: 9, Key: "k1"},
			`{"delete":{"_index":"o","_id":"k1","version":9,"version_type":"external"}}` + "\n"},
		{"null key", plugin.SinkRecord{Topic: "o", Value: `{}`}, "error: the key is null"},
		{"struct key", plugin.SinkRecord{Topic: "o", Key: map[string]any{"a": 1}, Value: `{}`}, "error: a key of type map[string]interface {} cannot be a document id"},
		{"text not an object", plugin.SinkRecord{Topic: "o", Key: "k", Value: `[1,2]`}, "error: the value is text but not a JSON object"},
		{"number value", plugin.SinkRecord{Topic: "o", Key: "k", Value: int64(3)}, "error: the value is not a struct or map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := s.build(&c.rec)
			got := string(o.lines)
			if err != nil {
				got = "error: " + err.Error()
			}
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
	ign, err := parse(map[string]string{KeyURL: "http://127.0.0.1:9200", KeyKeyIgnore: "true", KeyNullValues: BehaviorIgnore})
	if err != nil {
		t.Fatal(err)
	}
	o, err := ign.build(&plugin.SinkRecord{Topic: "o", Partition: 3, Offset: 11, Value: `{"a":1}`})
	if err != nil || !strings.HasPrefix(string(o.lines), `{"index":{"_index":"o","_id":"o+3+11"}}`) {
		t.Errorf("key.ignore: %q, %v", o.lines, err)
	}
	if _, err := ign.build(&plugin.SinkRecord{Topic: "o", Key: "k"}); !errors.Is(err, sinkwriter.ErrSkip) {
		t.Errorf("a tombstone under behavior.on.null.values=ignore: %v, want sinkwriter.ErrSkip", err)
	}
}

// Put and Flush straight on a task: Flush returns only once the server
// holds every record put (a linger of a minute does not hold a Flush back).
func TestStandinFlushWaitsForEveryRecord(t *testing.T) {
	es, err := estest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	task := &Task{}
	if err := task.Start(context.Background(), plugintest.NewSinkTaskContext(), map[string]string{KeyURL: es.URL, KeyLinger: "60000", KeyBatchSize: "100"}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	var recs []*plugin.SinkRecord
	for k := range 1050 {
		recs = append(recs, &plugin.SinkRecord{Topic: "orders", Offset: int64(k), Key: int64(k), Value: `{"n":1}`})
	}
	for i := 0; i < len(recs); i += 300 {
		if err := task.Put(context.Background(), recs[i:min(i+300, len(recs))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := task.Flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := es.Count("orders"); n != 1050 {
		t.Fatalf("%d documents after Flush, want 1050", n)
	}
}

// The sample in config/samples/sinks validates against the stand-in, with
// its URL and its password placeholder replaced as the worker would.
func TestStandinSampleValidates(t *testing.T) {
	b, err := os.ReadFile("../../../config/samples/sinks/connect_v1alpha1_kafkaconnector_elasticsearch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Metadata struct{ Name string }
		Spec     struct {
			Class  string
			Config map[string]string
		}
	}
	if err := yaml.Unmarshal(b, &kc); err != nil {
		t.Fatal(err)
	}
	es, err := estest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	es.Username, es.Password = kc.Spec.Config[KeyUsername], "Sample-Pw-1"
	cfg := kc.Spec.Config
	if cfg[KeyPassword] != "${secret:es-credentials:password}" {
		t.Fatalf("the sample's password is %q, want a placeholder", cfg[KeyPassword])
	}
	cfg["name"], cfg["connector.class"], cfg[KeyURL], cfg[KeyPassword] = kc.Metadata.Name, kc.Spec.Class, es.URL, "Sample-Pw-1"
	if errs := plugin.ValidateConfig(context.Background(), Plugin(), cfg).Errors(); len(errs) > 0 {
		t.Fatalf("the sample: %v", errs)
	}
}

// A request that fails after its retries keeps its records in the task:
// the failure reaches the runtime once (here through Put, so no rewind
// of the consumer would send the records again), and once the server is
// back the same records are written before Flush returns nil.
func TestStandinFailedRequestKeepsItsRecords(t *testing.T) {
	es, err := estest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	task := &Task{}
	if err := task.Start(context.Background(), plugintest.NewSinkTaskContext(), map[string]string{KeyURL: es.URL, KeyMaxRetries: "1", KeyRetryBackoff: "10"}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	es.Down()
	var recs []*plugin.SinkRecord
	for k := range 100 {
		recs = append(recs, &plugin.SinkRecord{Topic: "orders", Offset: int64(k), Key: int64(k), Value: `{"n":1}`})
	}
	if err := task.Put(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "Put to report the failed request", func() (bool, string) {
		err := task.Put(context.Background(), nil)
		return plugin.IsRetriable(err), fmt.Sprint(err)
	})
	if err := es.Up(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "a Flush that succeeds", func() (bool, string) {
		err := task.Flush(context.Background(), nil)
		return err == nil, fmt.Sprint(err)
	})
	if n := es.Count("orders"); n != 100 {
		t.Fatalf("%d documents after the server came back and Flush succeeded, want 100", n)
	}
}

// https with connection.ca.file: the task writes through TLS to a server
// whose certificate that CA signed; Validate without the CA names
// connection.url and the certificate problem.
func TestStandinTLS(t *testing.T) {
	ca := t.TempDir() + "/ca.pem"
	es, err := estest.StartTLS(ca)
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	cfg := map[string]string{"name": "es", "connector.class": "ElasticsearchSink", "topics": "orders", KeyURL: es.URL}
	errs := plugin.ValidateConfig(context.Background(), Plugin(), cfg).Errors()
	if len(errs) != 1 || errs[0].Name != KeyURL || !strings.Contains(errs[0].Message, "certificate") {
		t.Errorf("validating without the CA: %v, want a certificate error on %s", errs, KeyURL)
	}
	cfg[KeyCAFile] = ca
	if errs := plugin.ValidateConfig(context.Background(), Plugin(), cfg).Errors(); len(errs) > 0 {
		t.Fatalf("validating with the CA: %v", errs)
	}
	task := &Task{}
	if err := task.Start(context.Background(), plugintest.NewSinkTaskContext(), cfg); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	if err := task.Put(context.Background(), []*plugin.SinkRecord{{Topic: "orders", Key: "a", Value: `{"n":1}`}}); err != nil {
		t.Fatal(err)
	}
	if err := task.Flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := es.Count("orders"); n != 1 {
		t.Fatalf("%d documents over https, want 1", n)
	}
}

// Requests go to the URLs of connection.url in turn.
func TestStandinURLsInTurn(t *testing.T) {
	var urls []string
	var servers []*estest.Standin
	for range 2 {
		es, err := estest.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer es.Close()
		servers, urls = append(servers, es), append(urls, es.URL)
	}
	task := &Task{}
	if err := task.Start(context.Background(), plugintest.NewSinkTaskContext(), map[string]string{KeyURL: strings.Join(urls, ","), KeyBatchSize: "1", KeyMaxInFlight: "1"}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	for k := range 10 {
		if err := task.Put(context.Background(), []*plugin.SinkRecord{{Topic: "orders", Offset: int64(k), Key: int64(k), Value: `{"n":1}`}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := task.Flush(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	a, b := servers[0].Count("orders"), servers[1].Count("orders")
	if a+b != 10 || a < 3 || b < 3 {
		t.Fatalf("documents per server %d and %d, want 10 spread over both", a, b)
	}
}
