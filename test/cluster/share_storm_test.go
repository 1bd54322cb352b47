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

package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/test/cluster/harness"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// Exactly what was written, at least once: keyed records (many updates of
// each key) flow through a share-mode PostgresSink (upsert with the version
// guard upsert.version.column, 6 tasks on a 3-partition topic) on three
// worker processes, one of which is SIGKILLed every 1-2 s, six times, each
// restarted at once. Records a killed task held come back to the others
// (possibly after newer records of the same key were written); in the end
// every key holds its last value: none missing, none stale. The redeliveries
// the workers counted (share_records_redelivered_total, read from each
// process just before it is killed and from the live ones at the end; what
// a process counted between that read and the kill is lost) are printed.
//
// CONVEYOR_SHARE_STORM_RECORDS sets the record count: 30000 by default to
// keep CI time small; 300000 is the figure.
//
// kfake: the share heartbeat interval is lowered to 100 ms (a broker config
// in kfake, 5 s by default); a killed member's records return when kfake
// drops its connection's share session or its acquisition lock expires
// (group.share.record.lock.duration.ms, lowered to 5 s; kfake sweeps
// expired locks every share.record.lock.sweep.interval.ms, lowered to
// 500 ms, where Kafka times each lock out on its own).
func TestShareSinkUpsertUnderKillStorm(t *testing.T) {
	records, keys := 30_000, 3_000
	if v := os.Getenv("CONVEYOR_SHARE_STORM_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("CONVEYOR_SHARE_STORM_RECORDS=%q: want a count of at least 1000", v)
		}
		records, keys = n, n/10
	}
	const parts, kills = 3, 6
	srv, err := pgtest.Start(pgtest.Options{})
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	opts := harness.Options{SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 20 * time.Second, LostWorkerDelay: 2 * time.Second}
	e := newEnv(t, opts, kfake.SeedTopics(parts, "orders"), kfake.BrokerConfigs(map[string]string{
		"group.share.heartbeat.interval.ms":   "100",
		"group.share.record.lock.duration.ms": "5000",
		"share.record.lock.sweep.interval.ms": "500",
	}))
	db, err := srv.NewDatabase(ctx, "share_storm")
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL(db)

	// Records: update i sets key i%keys to value i, in its key's partition.
	last := make([]int, keys)
	recs := make([]*kgo.Record, records)
	for i := range recs {
		k := i % keys
		last[k] = i
		recs[i] = &kgo.Record{Topic: "orders", Partition: int32(k % parts),
			Key:   []byte(fmt.Sprintf(`{"schema":{"type":"struct","name":"Key","fields":[{"field":"id","type":"int64"}]},"payload":{"id":%d}}`, k)),
			Value: []byte(fmt.Sprintf(`{"schema":{"type":"struct","name":"Order","fields":[{"field":"id","type":"int64"},{"field":"v","type":"int64"}]},"payload":{"id":%d,"v":%d}}`, k, i))}
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	ws := e.start(ctx, "w1", "w2", "w3")
	const json = "org.apache.kafka.connect.json.JsonConverter"
	if err := ws[0].REST.PutConnector(ctx, "orders-pg", map[string]string{
		"connector.class": "PostgresSink", "topics": "orders", "tasks.max": "6", "connection.url": url,
		"consumer.group.type": "share", "insert.mode": "upsert", "pk.mode": "record_key", "auto.create": "true",
		"upsert.version.column": "kafka_offset", "batch.size": "2000",
		"key.converter": json, "value.converter": json,
	}); err != nil {
		t.Fatal(err)
	}
	e.waitPlacement(ctx, ws[0], 60*time.Second, "6 tasks RUNNING", harness.AllRunning(6), "orders-pg")
	// Produce while the storm runs, in 20 slices.
	produced := make(chan error, 1)
	go func() {
		step := (len(recs) + 19) / 20
		for i := 0; i < len(recs); i += step {
			if err := prod.ProduceSync(ctx, recs[i:min(i+step, len(recs))]...).FirstErr(); err != nil {
				produced <- err
				return
			}
			time.Sleep(400 * time.Millisecond) // paces the load over the storm
		}
		produced <- nil
	}()

	sup := supervise(e, 300*time.Millisecond, ws...)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 30))
	done, killedCounted := 0, 0.0
	for range kills {
		running := e.c.Running()
		if len(running) == 0 {
			time.Sleep(300 * time.Millisecond) // the fault schedule
			continue
		}
		target := running[rng.IntN(len(running))]
		// A killed process's counts die with it: read them just before.
		killedCounted += redeliveredBy(ctx, target)
		if err := target.Kill(); err == nil {
			done++
			t.Logf("SIGKILL %s", target.Name)
		}
		time.Sleep(time.Second + time.Duration(rng.IntN(1000))*time.Millisecond) // the fault schedule
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}

	var missing, stale int
	check := func(ctx context.Context) (bool, error) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return false, nil // the table may not exist yet
		}
		defer conn.Close(context.Background())
		rows, err := conn.Query(ctx, `SELECT id, v FROM orders`)
		if err != nil {
			return false, nil
		}
		got := make(map[int64]int64, keys)
		for rows.Next() {
			var id, v int64
			if err := rows.Scan(&id, &v); err != nil {
				return false, err
			}
			got[id] = v
		}
		if err := rows.Err(); err != nil {
			return false, err
		}
		missing, stale = 0, 0
		for k, v := range last {
			switch g, ok := got[int64(k)]; {
			case !ok:
				missing++
			case g != int64(v):
				stale++
			}
		}
		return missing == 0 && stale == 0, nil
	}
	err = testkit.Until(ctx, 120*time.Second, "every key at its last value in PostgreSQL", check)
	sup.Stop()
	redelivered := killedCounted
	for _, w := range e.c.Running() {
		redelivered += redeliveredBy(ctx, w)
	}
	fmt.Printf("conveyor-chaos: share_storm_records=%d\n", records)
	fmt.Printf("conveyor-chaos: share_storm_kills=%d\n", done)
	fmt.Printf("conveyor-chaos: share_storm_missing_keys=%d\n", missing)
	fmt.Printf("conveyor-chaos: share_storm_stale_keys=%d\n", stale)
	fmt.Printf("conveyor-chaos: share_storm_redelivered_records=%.0f\n", redelivered)
	if err != nil {
		t.Fatalf("%v: %d of %d keys missing, %d not at their last value", err, missing, keys, stale)
	}
}

// redeliveredBy is what a worker's share-mode tasks counted as delivered
// again (records a share group handed out more than once), 0 when its
// metrics cannot be read.
func redeliveredBy(ctx context.Context, w *harness.Worker) float64 {
	m, err := w.REST.Metrics(ctx)
	if err != nil {
		return 0
	}
	n := 0.0
	for _, g := range redeliveredRE.FindAllStringSubmatch(m, -1) {
		v, _ := strconv.ParseFloat(g[1], 64)
		n += v
	}
	return n
}
