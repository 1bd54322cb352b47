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

package autoscale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

const (
	srcNS = "autoscale-src"
	// The table source copies 3 tables, so it runs 3 tasks (natural limit Tables).
	srcTasks   = 3
	srcRows    = 2000 // rows inserted per table while it is behind: 6000 rows behind
	srcWorkers = 2    // minReplicas
)

// TestTableSourceBacklogScalesTheWorkers makes a PostgreSQL table source fall behind, and
// checks with real KEDA and the HPA that the workers go up to its task count (3, from 2)
// on the backlog the workers serve (GET /backlog/{c} on the metrics port, read by the
// derived metrics-api trigger with the metrics token), and back down once it caught up.
//
// How it falls behind: its database user keeps SELECT on the incrementing column only, so
// the count of rows behind works and the tasks' queries of every column are refused (a
// retriable failure: the tasks stay RUNNING and retry); rows arrive meanwhile. Granting
// SELECT again lets it catch up.
func TestTableSourceBacklogScalesTheWorkers(t *testing.T) {
	t.Parallel() // beside TestShareSinkBacklogScalesPastThePartitions: its own namespace and HPA
	ctx := t.Context()
	start := time.Now()
	dbURL := pg.CreateDatabase(t)
	db := pgtest.DatabaseName(dbURL)
	user, pass := "reader_"+db, "Reader-Pw-1"
	tables := []string{"t1", "t2", "t3"}
	var ddl []string
	ddl = append(ddl, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", user, pass))
	for _, tb := range tables {
		ddl = append(ddl, fmt.Sprintf("CREATE TABLE %s (id bigint PRIMARY KEY, note text)", tb), fmt.Sprintf("GRANT SELECT ON %s TO %s", tb, user))
	}
	pgtest.ExecURL(t, dbURL, ddl...)
	t.Cleanup(func() { _ = pg.Exec(context.Background(), db, "DROP OWNED BY "+user, "DROP ROLE "+user) })
	addr, err := cluster.ForwardIn(fmt.Sprintf("%s:%d", pg.Host, pg.Port))
	if err != nil {
		t.Fatal(err)
	}
	srcURL := (&url.URL{Scheme: "postgres", User: url.UserPassword(user, pass), Host: addr, Path: "/" + db, RawQuery: "sslmode=disable"}).String()

	kc, err := kgo.NewClient(kgo.SeedBrokers(cluster.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	var topics []string
	for _, tb := range tables {
		topics = append(topics, "ts-"+tb)
	}
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.RunKubectl(ctx, "", "create", "namespace", srcNS); err != nil {
		t.Fatal(err)
	}
	manifest := clusterManifest("ts", srcWorkers, cluster.KafkaAddr, lagThreshold) + fmt.Sprintf(`---
apiVersion: connect.conveyor.dev/v1alpha1
kind: KafkaConnector
metadata:
  name: tables
spec:
  clusterRef: {name: ts}
  class: PostgresTableSource
  tasksMax: 8
  config:
    connection.url: %s
    mode: incrementing
    incrementing.column.name: id
    table.whitelist: %s
    topic.prefix: ts-
    poll.interval.ms: "200"
`, srcURL, strings.Join(tables, ","))
	if _, err := cluster.RunKubectl(ctx, manifest, "apply", "-n", srcNS, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if _, err := cv.WaitConnectorsRunning(ctx, srcNS, 3*time.Minute, "tables"); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNoError(t, time.Minute, "the source's 3 tasks and its backlog unit in status", func() error {
		var k v1alpha1.KafkaConnector
		if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: srcNS, Name: "tables"}, &k); err != nil {
			return err
		}
		if k.Status.EffectiveTasks != srcTasks || k.Status.BacklogUnit != "rows" {
			return fmt.Errorf("effectiveTasks %d, backlogUnit %q", k.Status.EffectiveTasks, k.Status.BacklogUnit)
		}
		return nil
	})

	// Fall behind: SELECT on the incrementing column only, then rows arrive.
	var behind []string
	for _, tb := range tables {
		behind = append(behind, fmt.Sprintf("REVOKE SELECT ON %s FROM %s", tb, user), fmt.Sprintf("GRANT SELECT (id) ON %s TO %s", tb, user),
			fmt.Sprintf("INSERT INTO %s SELECT g, 'n' || g FROM generate_series(1, %d) g", tb, srcRows))
	}
	pgtest.ExecURL(t, dbURL, behind...)
	fellBehind := time.Now()

	peak := 0
	testkit.EventuallyNoError(t, 2*time.Minute, fmt.Sprintf("%d Ready workers", srcTasks), func() error {
		all, _, err := cv.WorkerPods(ctx, srcNS, "ts")
		if err != nil {
			return err
		}
		peak = max(peak, len(all))
		pods, err := readyWorkers(ctx, srcNS, "ts")
		if err != nil {
			return err
		}
		if len(pods) != srcTasks {
			return fmt.Errorf("%d Ready workers; HPA %s; %s; %s", len(pods), hpaState(ctx, srcNS), scaledObjectState(ctx, srcNS), backlogState(ctx, srcNS, "ts", "tables", pods))
		}
		return nil
	})
	scaleUp := time.Since(fellBehind)
	t.Logf("%d workers %.1fs after the source fell behind by %d rows; HPA %s", srcTasks, scaleUp.Seconds(), srcRows*len(tables), hpaState(ctx, srcNS))
	if peak > srcTasks {
		t.Fatalf("the workers went up to %d, want %d (the source's tasks)", peak, srcTasks)
	}

	// Catch up: SELECT again; every row reaches Kafka, the backlog goes to 0.
	var grant []string
	for _, tb := range tables {
		grant = append(grant, fmt.Sprintf("GRANT SELECT ON %s TO %s", tb, user))
	}
	pgtest.ExecURL(t, dbURL, grant...)
	caughtUpFrom := time.Now()
	testkit.EventuallyNoError(t, 2*time.Minute, "every row in Kafka", func() error {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return err
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		if n != int64(srcRows*len(tables)) {
			return fmt.Errorf("%d of %d rows in Kafka", n, srcRows*len(tables))
		}
		return nil
	})
	caughtUp := time.Now()
	testkit.EventuallyNoError(t, 2*time.Minute, fmt.Sprintf("%d Ready workers", srcWorkers), func() error {
		all, _, err := cv.WorkerPods(ctx, srcNS, "ts")
		if err != nil {
			return err
		}
		if len(all) != srcWorkers {
			return fmt.Errorf("%d workers; HPA %s", len(all), hpaState(ctx, srcNS))
		}
		return nil
	})
	scaleDown := time.Since(caughtUp)
	fmt.Printf("conveyor-e2e: autoscale_source_peak_workers=%d\n", peak)
	fmt.Printf("conveyor-e2e: autoscale_source_rows_behind=%d\n", srcRows*len(tables))
	fmt.Printf("conveyor-e2e: autoscale_source_scale_up_s=%.1f\n", scaleUp.Seconds())
	fmt.Printf("conveyor-e2e: autoscale_source_catch_up_s=%.1f\n", caughtUp.Sub(caughtUpFrom).Seconds())
	fmt.Printf("conveyor-e2e: autoscale_source_scale_down_s=%.1f\n", scaleDown.Seconds())
	fmt.Printf("conveyor-e2e: autoscale_source_test_s=%.1f\n", time.Since(start).Seconds())
}

// backlogState is what each worker of ConnectCluster ns/name answers on
// GET /backlog/{connector} with the metrics token, for failure messages.
func backlogState(ctx context.Context, ns, name, connector string, pods []corev1.Pod) string {
	var sec corev1.Secret
	if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-metrics-token"}, &sec); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:%d/backlog/%s", p.Status.PodIP, v1alpha1.DefaultMetricsPort, url.PathEscape(connector)), nil)
		if err != nil {
			return err.Error()
		}
		req.Header.Set("Authorization", "Bearer "+string(sec.Data["token"]))
		resp, err := cluster.HTTPClient().Do(req)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v; ", p.Name, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&b, "%s: %d %s; ", p.Name, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return "backlog " + b.String()
}
