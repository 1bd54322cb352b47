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

// Command sinks benchmarks the Redis and S3 sinks against bare clients
// writing the same records in the same run, and prints
// "conveyor-bench: NAME=VALUE" lines:
//
//   - redis_sink_vs_raw_ratio: RedisSink's records per second, from its
//     task's RUNNING until every key holds its value, over go-redis
//     pipelining the same SETs in batches of redis.batch.size;
//   - s3_sink_vs_raw_ratio: S3Sink's records per second (format.class=bytes:
//     the values' JSON passed through), until every object is uploaded,
//     over minio-go PutObject of the same objects' bytes, one after the
//     other; s3_json_sink_vs_raw_ratio the same with format.class=json
//     (JsonConverter's values pass through as JSON text, which the sink
//     writes as it would write the parsed values), and
//     s3_json_vs_bytes_ratio the JSON sink over the bytes sink, in turn;
//   - s3_parquet_vs_bytes_ratio: S3Sink's records per second with
//     format.class=parquet (JsonConverter with schemas.enable=true parses
//     each value's envelope, the sink writes Parquet columns) over
//     format.class=bytes passing the same envelopes through, both reading
//     the same topic of the same records with their schema.
//
// Both sides run against the same real servers (redis-server, versitygw),
// in turn, -tries times; the try with the median ratio counts.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	goredis "github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	redissink "github.com/conveyor-dev/conveyor/runtime/connectors/redis"
	s3sink "github.com/conveyor-dev/conveyor/runtime/connectors/s3"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/worker"
	"github.com/conveyor-dev/conveyor/test/bench/benchkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

var (
	records = flag.Int("records", 200_000, "records per run")
	tries   = flag.Int("tries", 3, "runs of each side; the median ratio counts")
	only    = flag.String("only", "", "redis or s3: run one benchmark")
	verbose = flag.Bool("v", false, "print every try")
)

const (
	topic = "sink"
	typed = "sink-typed" // the same records in JsonConverter's schema envelope
	parts = 4
	flush = 1000 // S3 records per object
	batch = 2000 // Redis records per pipeline
)

func figure(name string, v float64) { benchkit.Figure(name, v) }

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench-sinks: "+format+"\n", args...)
	}
}

func main() {
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(worker.DefaultGCPercent) // the runners run as in a worker process
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-sinks: %v\n", err)
		os.Exit(1)
	}
}

// rec is one record: key k-<i>, value a JSON object of about 100 bytes,
// and the same value in JsonConverter's schema envelope.
type rec struct {
	part       int32
	key, value []byte
	envelope   []byte
}

// recSchema is the schema of rec's values, in JsonConverter's envelope.
const recSchema = `{"type":"struct","name":"rec","optional":false,"fields":[{"field":"id","type":"int64","optional":false},` +
	`{"field":"name","type":"string","optional":false},{"field":"note","type":"string","optional":true},{"field":"qty","type":"int32","optional":false}]}`

func workload(n int) []rec {
	out := make([]rec, n)
	for i := range out {
		out[i] = rec{part: int32(i % parts), key: []byte("k-" + strconv.Itoa(i)),
			value: fmt.Appendf(nil, `{"id":%d,"name":"name-%d","note":"note number %d","qty":%d}`, i, i, i*7, i%1000)}
		out[i].envelope = fmt.Appendf(nil, `{"schema":%s,"payload":%s}`, recSchema, out[i].value)
	}
	return out
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-sinks-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, topic, typed))
	if err != nil {
		return err
	}
	defer k.Close()
	recs := workload(*records)
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(50_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	for i := 0; i < len(recs); i += 10_000 {
		var b []*kgo.Record
		for _, r := range recs[i:min(i+10_000, len(recs))] {
			b = append(b, &kgo.Record{Topic: topic, Partition: r.part, Key: r.key, Value: r.value})
			if *only != "redis" {
				b = append(b, &kgo.Record{Topic: typed, Partition: r.part, Key: r.key, Value: r.envelope})
			}
		}
		if err := cl.ProduceSync(ctx, b...).FirstErr(); err != nil {
			return err
		}
	}
	logf("%d records in topics %s and %s", len(recs), topic, typed)
	if *only != "s3" {
		if err := benchRedis(ctx, dir, k, recs); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
	}
	if *only != "redis" {
		if err := benchS3(ctx, dir, k, recs); err != nil {
			return fmt.Errorf("s3: %w", err)
		}
	}
	return nil
}

// runSink runs one task of p for a fresh connector (a new group, so it
// reads the topic from the start) until done says the destination holds
// everything, and returns the records per second from its RUNNING.
func runSink(ctx context.Context, k *kfake.Cluster, p plugin.Plugin, cfg map[string]string, n int, done func() (bool, error)) (float64, error) {
	return benchkit.RunTask(ctx, benchkit.Task{Kafka: []kgo.Opt{kgo.SeedBrokers(k.ListenAddrs()...)}, Plugin: p, Connector: cfg}, n, done)
}

// paired runs base and conn in turn, tries times, and reports the try
// with the median ratio.
func paired(name string, base, conn func() (float64, error)) (b, c float64, err error) {
	return benchkit.Paired(name, *tries, logf, base, conn)
}

func benchRedis(ctx context.Context, dir string, k *kfake.Cluster, recs []rec) error {
	srv, err := servers.StartRedis(ctx, servers.RedisOptions{Dir: dir + "/redis"})
	if err != nil {
		return err
	}
	defer srv.Kill()
	c := srv.Client()
	defer c.Close()
	// The last key of each partition: the sink writes a partition's
	// records in order, so once these hold their values, all keys do.
	last := map[int32]rec{}
	for _, r := range recs {
		last[r.part] = r
	}
	raw := func() (float64, error) {
		if err := c.FlushDB(ctx).Err(); err != nil {
			return 0, err
		}
		start := time.Now()
		for i := 0; i < len(recs); i += batch {
			p := c.Pipeline()
			for _, r := range recs[i:min(i+batch, len(recs))] {
				p.Set(ctx, string(r.key), r.value, 0)
			}
			if _, err := p.Exec(ctx); err != nil {
				return 0, err
			}
		}
		return float64(len(recs)) / time.Since(start).Seconds(), nil
	}
	run := 0
	sink := func() (float64, error) {
		if err := c.FlushDB(ctx).Err(); err != nil {
			return 0, err
		}
		run++
		cfg := map[string]string{"name": "bench-redis-" + strconv.Itoa(run), "connector.class": redissink.Class, "topics": topic,
			"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": "org.apache.kafka.connect.storage.StringConverter",
			redissink.KeyURL: srv.URL(), redissink.KeyBatchSize: strconv.Itoa(batch)}
		rate, err := runSink(ctx, k, redissink.Plugin(), cfg, len(recs), func() (bool, error) {
			for _, r := range last {
				v, err := c.Get(ctx, string(r.key)).Bytes()
				if err != nil && !errors.Is(err, goredis.Nil) {
					return false, err
				}
				if !bytes.Equal(v, r.value) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return 0, err
		}
		if n := c.DBSize(ctx).Val(); n != int64(len(recs)) {
			return 0, fmt.Errorf("Redis holds %d keys, want %d", n, len(recs))
		}
		return rate, nil
	}
	b, s, err := paired("redis", raw, sink)
	if err != nil {
		return err
	}
	figure("redis_raw_records_per_s", b)
	figure("redis_sink_records_per_s", s)
	figure("redis_sink_vs_raw_ratio", s/b)
	return nil
}

func benchS3(ctx context.Context, dir string, k *kfake.Cluster, recs []rec) error {
	srv, err := servers.StartS3(ctx, dir+"/s3")
	if err != nil {
		return err
	}
	defer srv.Kill()
	c, err := srv.Client()
	if err != nil {
		return err
	}
	if err := c.MakeBucket(ctx, "bench", minio.MakeBucketOptions{}); err != nil {
		return err
	}
	// The objects the sink writes: per partition, flush records a piece,
	// their values as JSON lines (the sink re-encodes the same JSON).
	type obj struct {
		name string
		body []byte
	}
	var objs []obj
	lastOf := map[int32]string{}
	byPart := map[int32][][]byte{}
	for _, r := range recs {
		byPart[r.part] = append(byPart[r.part], r.value)
	}
	for p := int32(0); p < parts; p++ {
		vs := byPart[p]
		for start := 0; start < len(vs); start += flush {
			var b []byte
			for _, v := range vs[start:min(start+flush, len(vs))] {
				b = append(append(b, v...), '\n')
			}
			name := fmt.Sprintf("%s/partition=%d/%s+%d+%010d.json", topic, p, topic, p, start)
			objs = append(objs, obj{name, b})
			lastOf[p] = name
		}
	}
	// uploaded tells whether every one of the objects is in the bucket.
	uploaded := func(names []string) func() (bool, error) {
		return func() (bool, error) {
			for _, n := range names {
				if _, err := c.StatObject(ctx, "bench", n, minio.StatObjectOptions{}); err != nil {
					if minio.ToErrorResponse(err).StatusCode == 404 {
						return false, nil
					}
					return false, err
				}
			}
			return true, nil
		}
	}
	run := 0
	raw := func() (float64, error) {
		run++
		prefix := "raw-" + strconv.Itoa(run) + "/"
		start := time.Now()
		for _, o := range objs {
			if _, err := c.PutObject(ctx, "bench", prefix+o.name, bytes.NewReader(o.body), int64(len(o.body)),
				minio.PutObjectOptions{ContentType: "application/json", DisableContentSha256: true}); err != nil {
				return 0, err
			}
		}
		return float64(len(recs)) / time.Since(start).Seconds(), nil
	}
	// sinkConfig is the config of connector name writing topic in format,
	// with JsonConverter values (schemas.enable as schemas), and its
	// objects' extension.
	sinkConfig := func(name, topic, format, schemas string) (map[string]string, string) {
		cfg := map[string]string{"name": name, "connector.class": s3sink.Class, "topics": topic,
			"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
			"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": schemas,
			s3sink.KeyBucket: "bench", s3sink.KeyStoreURL: srv.URL(), s3sink.KeyAccessKey: srv.Access, s3sink.KeySecretKey: srv.Secret,
			s3sink.KeyTopicsDir: name, s3sink.KeyFlushSize: strconv.Itoa(flush), s3sink.KeyFormat: format}
		ext := ".json"
		switch format {
		case s3sink.FormatBytes:
			// What is in Kafka, passed through without being parsed.
			cfg["value.converter"], ext = "org.apache.kafka.connect.converters.ByteArrayConverter", ".bin"
		case s3sink.FormatParquet:
			ext = ".snappy.parquet"
		}
		return cfg, ext
	}
	sink := func(format string) (float64, error) {
		name := "bench-s3-" + format + "-" + strconv.Itoa(run)
		cfg, ext := sinkConfig(name, topic, format, "false")
		rename := func(n string) string { return name + "/" + strings.TrimSuffix(n, ".json") + ext }
		var last []string
		for _, n := range lastOf {
			last = append(last, rename(n))
		}
		rate, err := runSink(ctx, k, s3sink.Plugin(), cfg, len(recs), uploaded(last))
		if err != nil {
			return 0, err
		}
		// Same bytes as the baseline's objects.
		for _, o := range objs[:1] {
			g, err := c.GetObject(ctx, "bench", rename(o.name), minio.GetObjectOptions{})
			if err != nil {
				return 0, err
			}
			b, err := io.ReadAll(g)
			g.Close()
			if err != nil || !bytes.Equal(b, o.body) {
				return 0, fmt.Errorf("object %s differs from the baseline's (%v)", o.name, err)
			}
		}
		return rate, nil
	}
	// format.class=bytes: the values' JSON passed through (the headline
	// figure); json: parsed by JsonConverter and written again.
	b, s, err := paired("s3 bytes", raw, func() (float64, error) { return sink(s3sink.FormatBytes) })
	if err != nil {
		return err
	}
	figure("s3_raw_records_per_s", b)
	figure("s3_sink_records_per_s", s)
	figure("s3_sink_vs_raw_ratio", s/b)
	b, s, err = paired("s3 json", raw, func() (float64, error) { return sink(s3sink.FormatJSON) })
	if err != nil {
		return err
	}
	figure("s3_json_sink_records_per_s", s)
	figure("s3_json_sink_vs_raw_ratio", s/b)
	// The JSON path against the bytes path, in turn on the same records:
	// with the pass-through (no transform), JsonConverter's values go to
	// the lines without being parsed.
	// Each run reads the topic from the start under a connector name of
	// its own.
	fresh := func(format string) func() (float64, error) {
		return func() (float64, error) { run++; return sink(format) }
	}
	b, s, err = paired("s3 json vs bytes", fresh(s3sink.FormatBytes), fresh(s3sink.FormatJSON))
	if err != nil {
		return err
	}
	figure("s3_json_vs_bytes_ratio", s/b)

	// format.class=parquet against format.class=bytes on the same
	// envelopes; each run reads the typed topic from the start.
	typedRun := 0
	typedSink := func(format string) (float64, error) {
		typedRun++
		name := "bench-s3-typed-" + format + "-" + strconv.Itoa(typedRun)
		cfg, ext := sinkConfig(name, typed, format, "true")
		var last []string
		for _, n := range lastOf {
			last = append(last, name+"/"+strings.ReplaceAll(strings.TrimSuffix(n, ".json"), topic, typed)+ext)
		}
		rate, err := runSink(ctx, k, s3sink.Plugin(), cfg, len(recs), uploaded(last))
		if err != nil {
			return 0, err
		}
		if format == s3sink.FormatParquet {
			// A whole Parquet file: it ends with its footer's magic.
			g, err := c.GetObject(ctx, "bench", last[0], minio.GetObjectOptions{})
			if err != nil {
				return 0, err
			}
			b, err := io.ReadAll(g)
			g.Close()
			if err != nil || !bytes.HasSuffix(b, []byte("PAR1")) {
				return 0, fmt.Errorf("object %s is no Parquet file (%d bytes, %v)", last[0], len(b), err)
			}
		}
		return rate, nil
	}
	b, s, err = paired("s3 parquet", func() (float64, error) { return typedSink(s3sink.FormatBytes) }, func() (float64, error) { return typedSink(s3sink.FormatParquet) })
	if err != nil {
		return err
	}
	figure("s3_typed_bytes_records_per_s", b)
	figure("s3_parquet_records_per_s", s)
	figure("s3_parquet_vs_bytes_ratio", s/b)
	return nil
}
