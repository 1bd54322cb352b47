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

package kedascale

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/tablesource"
	"github.com/conveyor-dev/conveyor/runtime/herder"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/rest"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// The backlog triggers, evaluated by KEDA's own metrics-api scaler and
// formula code: the figures come from the worker's own code (the
// PostgreSQL table source's Backlog against a real PostgreSQL, the share
// group's backlog from kfake's DescribeShareGroupOffsets), served by the
// worker's own metrics server behind the metrics token.
//
// The stand-in: the derived trigger asks KEDA to read every endpoint of the
// workers' Service (aggregateFromKubeServiceEndpoints), and the API server
// refuses an EndpointSlice address in the loopback range, where this
// machine's only listener may bind. So KEDA's client answers its
// EndpointSlice list with one ready endpoint at 127.0.0.1 and the metrics
// port, after checking that KEDA asked for the Service's slices
// (kubernetes.io/service-name) in the cluster's namespace. The local
// cluster's e2e (test/e2e/autoscale) has the real EndpointSlices.
func TestBacklogTriggersWithKEDAsCodeEndpointsStandin(t *testing.T) {
	pg, err := pgtest.Start(pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	dbURL := pg.CreateDatabase(t)
	pgtest.ExecURL(t, dbURL, "CREATE TABLE orders (id bigint PRIMARY KEY, note text)",
		"INSERT INTO orders SELECT g, 'n' || g FROM generate_series(1, 5000) g")
	srcCfg := map[string]string{
		plugin.KeyConnectorClass: tablesource.Class, "connection.url": dbURL, "mode": "incrementing",
		"incrementing.column.name": "id", "table.whitelist": "orders", "topic.prefix": "pg-",
	}
	offsets := plugintest.NewOffsetStore()
	if err := offsets.Put(map[string]any{"table": "public.orders"}, map[string]any{"incrementing": int64(1000)}); err != nil {
		t.Fatal(err)
	}

	b := newBroker(t, false)
	b.topic(t, "audit", 2, 3000)
	adm := b.adm
	if _, err := adm.AlterShareGroupOffsets(context.Background(), connectnames.ShareGroup("audit"),
		kadm.Offsets{"audit": {0: {Topic: "audit", Partition: 0, At: 500}, 1: {Topic: "audit", Partition: 1, At: 500}}}); err != nil {
		t.Fatalf("setting the share group's start offsets: %v", err)
	}

	const token = "backlog-metrics-token-1"
	srv := rest.NewMetricsServer(prometheus.NewRegistry(), rest.StaticToken(token), nil, nil, func(ctx context.Context, name string) (plugin.Backlog, error) {
		switch name {
		case "orders-db":
			return (&tablesource.Connector{}).Backlog(ctx, srcCfg, offsets)
		case "audit":
			return herder.ShareGroupBacklog(ctx, adm, connectnames.ShareGroup(name), []string{"audit"})
		}
		return plugin.Backlog{}, connectapi.NotFoundf("Connector %s not found", name)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	sourceWith := func(tasks int32) func(ns string) v1alpha1.KafkaConnector {
		return func(ns string) v1alpha1.KafkaConnector {
			kc := sink(ns, "orders-db", tasks, srcCfg)
			kc.Spec.Class, kc.Status.BacklogUnit = "PostgresTableSource", plugin.BacklogRows
			return kc
		}
	}
	source := sourceWith(3)
	shareSink := func(ns string) v1alpha1.KafkaConnector {
		kc := sink(ns, "audit", 6, map[string]string{"topics": "audit", plugin.KeyConsumerGroupType: plugin.GroupTypeShare})
		// In share mode the runtime runs tasks.max tasks (the partitions do not limit
		// them), so effectiveTasks is 6; KEDA's kafka scaler would cap the topic at
		// 2 partitions × 1000, 2 workers.
		return kc
	}
	cases := []struct {
		name    string
		kc      func(ns string) v1alpha1.KafkaConnector
		want    int32
		comment string
	}{
		{"table source", sourceWith(8), 4, "4000 rows behind (5000 rows, offset at id 1000), 8 tasks: 4 workers"},
		{"table source capped by its tasks", source, 3, "4000 rows behind, 3 tasks: capped at 3 × 1000"},
		{"share sink", shareSink, 5, "5000 records behind (2 partitions × 3000, start offsets 500), tasks.max 6: 5 workers, past the 2 partitions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := namespace(t)
			cc := b.cluster(ns, 1, 10, 1000)
			cc.Spec.Metrics.Port = ptr.To(port)
			so, _, _ := derive(cc, []v1alpha1.KafkaConnector{c.kc(ns)})
			if so == nil || len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "metrics-api" {
				t.Fatalf("derived ScaledObject %+v, want one metrics-api trigger", so)
			}
			bta := backlogTA(cc, so)
			kedaClient := &loopbackEndpoints{Client: k8s, port: port, service: cc.Name + "-connect", namespace: ns}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cc.MetricsTokenSecret().Name, Namespace: ns}, Data: map[string][]byte{cc.MetricsTokenSecret().Key: []byte(token)}}
			ev, err := newEvaluatorWith(t, ns, so, bta, []client.Object{secret}, kedaClient).read()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: metrics %v → %d workers (bounds %d..%d)", c.comment, ev.metrics, ev.desired, *so.Spec.MinReplicaCount, *so.Spec.MaxReplicaCount)
			if ev.desired != c.want {
				t.Fatalf("%s: the HPA asks for %d workers, want %d (metrics %v)", c.comment, ev.desired, c.want, ev.metrics)
			}
			if !kedaClient.asked() {
				t.Fatal("KEDA never listed the Service's EndpointSlices")
			}
		})
	}

	// Without the TriggerAuthentication, KEDA sends no token: the worker refuses it
	// (401) and KEDA's read fails, the trigger's value missing from the composite.
	t.Run("refused without auth", func(t *testing.T) {
		ns := namespace(t)
		cc := b.cluster(ns, 1, 10, 1000)
		cc.Spec.Metrics.Port = ptr.To(port)
		so, _, _ := derive(cc, []v1alpha1.KafkaConnector{source(ns)})
		so.Spec.Triggers[0].AuthenticationRef = nil
		delete(so.Spec.Triggers[0].Metadata, "authModes")
		so.Spec.Fallback = nil // KEDA's answer to the HPA is then the error itself
		_, err := newEvaluatorWith(t, ns, so, nil, nil, &loopbackEndpoints{Client: k8s, port: port, service: cc.Name + "-connect", namespace: ns}).read()
		if err == nil {
			t.Fatal("KEDA read the backlog without the metrics token")
		}
		t.Logf("without the token KEDA answers: %v", err)
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/backlog/orders-db", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET /backlog without a token: %d, want 401", resp.StatusCode)
		}
	})
}

// backlogTA is the derived TriggerAuthentication of the backlog triggers.
func backlogTA(cc *v1alpha1.ConnectCluster, so *kedav1alpha1.ScaledObject) *kedav1alpha1.TriggerAuthentication {
	return autoscaling.BuildBacklogTriggerAuthentication(cc, so, autoscaling.Target{DeploymentName: cc.Name + "-connect"})
}

// loopbackEndpoints answers KEDA's EndpointSlice list for the workers'
// Service with one ready endpoint at 127.0.0.1 (see the test's comment).
type loopbackEndpoints struct {
	client.Client
	port               int32
	service, namespace string

	mu  sync.Mutex
	hit bool
}

func (c *loopbackEndpoints) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l, ok := list.(*discoveryv1.EndpointSliceList)
	if !ok {
		return c.Client.List(ctx, list, opts...)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.Namespace != c.namespace || lo.LabelSelector == nil || lo.LabelSelector.String() != discoveryv1.LabelServiceName+"="+c.service {
		return errors.New("stand-in: KEDA asked for EndpointSlices " + lo.LabelSelector.String() + " in " + lo.Namespace + ", not the workers' Service " + c.service + " in " + c.namespace)
	}
	c.mu.Lock()
	c.hit = true
	c.mu.Unlock()
	l.Items = []discoveryv1.EndpointSlice{{
		ObjectMeta:  metav1.ObjectMeta{Name: c.service + "-loopback", Namespace: c.namespace, Labels: map[string]string{discoveryv1.LabelServiceName: c.service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To(c.port)}},
	}}
	return nil
}

func (c *loopbackEndpoints) asked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hit
}
