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

// Command schemas benchmarks the schema registry converters (Avro,
// Protobuf, JSON Schema) against baselines measured in the same run, and
// prints "conveyor-bench: NAME=VALUE" lines, for FORMAT avro, protobuf and
// jsonschema:
//
//   - FORMAT_source_vs_json_ratio: a RangeSource task's records per second
//     (its records of an int64 id and a 200-byte string, from its RUNNING
//     until the topic's end offsets hold them all) with value.converter
//     FORMAT over the same with JsonConverter schemas.enable=true;
//   - FORMAT_sink_vs_bytes_ratio: an S3Sink task's records per second
//     reading a topic of FORMAT-encoded records (an id, two strings, an
//     int32: written in the Confluent wire format by the same converter)
//     and writing them as JSON lines (format.class=json, value.converter
//     FORMAT: each value decoded into a struct and rendered again), over
//     format.class=bytes with ByteArrayConverter on the same topic (the
//     values passed through), until every object is uploaded.
//
// Everything runs in this process against kfake, a real schema registry
// (CONVEYOR_SCHEMA_REGISTRY, hack/schema-registry.sh) and a real S3 server
// (CONVEYOR_VERSITYGW, hack/versitygw.sh); each pair runs -tries times and
// the try with the median ratio counts. -cpuprofile writes a CPU profile of
// the whole run.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/rangesource"
	s3sink "github.com/conveyor-dev/conveyor/runtime/connectors/s3"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin/plugintest"
	"github.com/conveyor-dev/conveyor/runtime/task/offsettest"
	"github.com/conveyor-dev/conveyor/runtime/worker"
	"github.com/conveyor-dev/conveyor/test/bench/benchkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
)

var (
	records    = flag.Int("records", 400_000, "records per run (a multiple of 4000)")
	tries      = flag.Int("tries", 3, "runs of each side; the median ratio counts")
	only       = flag.String("only", "", "avro, protobuf or jsonschema: measure one format; source or sink: one side")
	verbose    = flag.Bool("v", false, "print every try")
	cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
)

const (
	parts = 4
	flush = 1000 // S3 records per object
)

// formats are the converters measured, by the figures' prefix.
var formats = []struct{ name, class string }{
	{"avro", converter.AvroClass},
	{"protobuf", converter.ProtobufClass},
	{"jsonschema", converter.JSONSchemaClass},
}

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, "bench-schemas: "+format+"\n", args...)
	}
}

func main() {
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(worker.DefaultGCPercent) // the runners run as in a worker process
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-schemas: %v\n", err)
		os.Exit(1)
	}
}

// wanted tells whether -only leaves the format or the side (source,
// sink) called name in.
func wanted(name string) bool {
	switch *only {
	case "", name:
		return true
	case "source", "sink":
		return name != "source" && name != "sink"
	}
	return name == "source" || name == "sink"
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-schemas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	reg, err := servers.StartSchemaRegistry(ctx, dir, servers.SchemaRegistryOptions{})
	if err != nil {
		return err
	}
	defer reg.Close()
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(parts))
	if err != nil {
		return err
	}
	defer k.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(50_000), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	b := &bench{k: k, cl: cl, adm: kadm.NewClient(cl), reg: reg.URL}
	var s3 *servers.S3
	for _, f := range formats {
		if !wanted(f.name) {
			continue
		}
		if wanted("source") {
			if err := b.source(ctx, f.name, f.class); err != nil {
				return fmt.Errorf("%s source: %w", f.name, err)
			}
		}
		if wanted("sink") {
			if s3 == nil {
				if s3, err = servers.StartS3(ctx, dir+"/s3"); err != nil {
					return err
				}
				defer s3.Kill()
				c, err := s3.Client()
				if err != nil {
					return err
				}
				if err := c.MakeBucket(ctx, "bench", minio.MakeBucketOptions{}); err != nil {
					return err
				}
			}
			if err := b.sink(ctx, s3, f.name, f.class); err != nil {
				return fmt.Errorf("%s sink: %w", f.name, err)
			}
		}
	}
	return nil
}

type bench struct {
	k   *kfake.Cluster
	cl  *kgo.Client
	adm *kadm.Client
	reg string
	run int // numbers the connectors and topics of each run
}

func (b *bench) kafka() []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(b.k.ListenAddrs()...)} }

// source measures a RangeSource writing with value.converter class over
// the same writing JsonConverter with schemas.
func (b *bench) source(ctx context.Context, name, class string) error {
	one := func(class string, extra map[string]string) (float64, error) {
		b.run++
		topic := "range-" + strconv.Itoa(b.run)
		cfg := map[string]string{"name": "bench-" + topic, "connector.class": "RangeSource",
			rangesource.KeyTopic: topic, rangesource.KeyCount: strconv.Itoa(*records), rangesource.KeyRecordSize: "200",
			"key.converter": converter.JSONClass, "key.converter.schemas.enable": "false", "value.converter": class}
		for k, v := range extra {
			cfg[k] = v
		}
		p := rangesource.Plugin()
		conn := p.NewConnector()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if err := conn.Start(cctx, plugintest.NewConnectorContext(map[string]int32{topic: parts}), cfg); err != nil {
			return 0, err
		}
		defer conn.Stop()
		if _, _, err := conn.NaturalLimit(cctx); err != nil {
			return 0, err
		}
		tcs, err := conn.TaskConfigs(1)
		if err != nil {
			return 0, err
		}
		if _, err := b.adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			return 0, err
		}
		return benchkit.RunTask(ctx, benchkit.Task{Kafka: b.kafka(), Plugin: p, Connector: cfg, Config: tcs[0], Offsets: offsettest.New()},
			*records, func() (bool, error) {
				ends, err := b.adm.ListEndOffsets(ctx, topic)
				if err != nil {
					return false, err
				}
				var n int64
				ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
				return n >= int64(*records), nil
			})
	}
	base, conv, err := benchkit.Paired(name+" source", *tries, logf,
		func() (float64, error) {
			return one(converter.JSONClass, map[string]string{"value.converter.schemas.enable": "true"})
		},
		func() (float64, error) {
			return one(class, map[string]string{"value.converter." + converter.KeyRegistryURL: b.reg})
		})
	if err != nil {
		return err
	}
	benchkit.Figure(name+"_source_json_records_per_s", base)
	benchkit.Figure(name+"_source_records_per_s", conv)
	benchkit.Figure(name+"_source_vs_json_ratio", conv/base)
	return nil
}

// recSchema is the schema of the sink's records.
var recSchema = data.StructOf("dev.conveyor.bench.Rec",
	data.F("id", data.Int64Schema), data.F("name", data.StringSchema),
	data.F("note", data.OptionalStringSchema), data.F("qty", data.Int32Schema))

// sink fills a topic with records written by class and measures an S3
// sink decoding them into JSON lines over the same sink passing their
// bytes through.
func (b *bench) sink(ctx context.Context, s3 *servers.S3, name, class string) error {
	topic := "typed-" + name
	conv, err := converter.New(class, map[string]string{converter.KeyRegistryURL: b.reg}, false)
	if err != nil {
		return err
	}
	if _, err := b.adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		return err
	}
	for i := 0; i < *records; i += 10_000 {
		var rs []*kgo.Record
		for j := i; j < min(i+10_000, *records); j++ {
			v, err := data.NewStructValues(recSchema, []any{int64(j), "name-" + strconv.Itoa(j), "note number " + strconv.Itoa(j*7), int32(j % 1000)})
			if err != nil {
				return err
			}
			val, err := conv.FromConnectData(topic, recSchema, v)
			if err != nil {
				return err
			}
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(j % parts), Key: []byte("k-" + strconv.Itoa(j)), Value: val})
		}
		if err := b.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			return err
		}
	}
	c, err := s3.Client()
	if err != nil {
		return err
	}
	// The last object of each partition: the sink writes a partition's
	// records in order, so once these are there, all are.
	if *records%(parts*flush) != 0 {
		return fmt.Errorf("-records %d: give a multiple of %d (%d partitions of whole %d-record objects)", *records, parts*flush, parts, flush)
	}
	lastStart := *records/parts - flush
	one := func(format string) (float64, error) {
		b.run++
		cname := "bench-s3-" + name + "-" + format + "-" + strconv.Itoa(b.run)
		cfg := map[string]string{"name": cname, "connector.class": s3sink.Class, "topics": topic,
			"key.converter":   converter.StringClass,
			"value.converter": class, "value.converter." + converter.KeyRegistryURL: b.reg,
			s3sink.KeyBucket: "bench", s3sink.KeyStoreURL: s3.URL(), s3sink.KeyAccessKey: s3.Access, s3sink.KeySecretKey: s3.Secret,
			s3sink.KeyTopicsDir: cname, s3sink.KeyFlushSize: strconv.Itoa(flush), s3sink.KeyFormat: format}
		ext := ".json"
		if format == s3sink.FormatBytes {
			cfg["value.converter"], ext = converter.ByteArrayClass, ".bin"
		}
		var last []string
		for p := 0; p < parts; p++ {
			last = append(last, fmt.Sprintf("%s/%s/partition=%d/%s+%d+%010d%s", cname, topic, p, topic, p, lastStart, ext))
		}
		rate, err := benchkit.RunTask(ctx, benchkit.Task{Kafka: b.kafka(), Plugin: s3sink.Plugin(), Connector: cfg}, *records, func() (bool, error) {
			for _, n := range last {
				if _, err := c.StatObject(ctx, "bench", n, minio.StatObjectOptions{}); err != nil {
					if minio.ToErrorResponse(err).StatusCode == 404 {
						return false, nil
					}
					return false, err
				}
			}
			return true, nil
		})
		if err != nil || format != s3sink.FormatJSON {
			return rate, err
		}
		// The first record of partition 0, decoded and rendered as JSON.
		first := fmt.Sprintf("%s/%s/partition=0/%s+0+%010d.json", cname, topic, topic, 0)
		o, err := c.GetObject(ctx, "bench", first, minio.GetObjectOptions{})
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(o)
		o.Close()
		want := `{"id":0,"name":"name-0","note":"note number 0","qty":0}` + "\n"
		if err != nil || !bytes.HasPrefix(body, []byte(want)) {
			return 0, fmt.Errorf("object %s starts %.80q, want %q (%v)", first, body, want, err)
		}
		return rate, nil
	}
	base, dec, err := benchkit.Paired(name+" sink", *tries, logf,
		func() (float64, error) { return one(s3sink.FormatBytes) },
		func() (float64, error) { return one(s3sink.FormatJSON) })
	if err != nil {
		return err
	}
	benchkit.Figure(name+"_sink_bytes_records_per_s", base)
	benchkit.Figure(name+"_sink_records_per_s", dec)
	benchkit.Figure(name+"_sink_vs_bytes_ratio", dec/base)
	return nil
}
