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

package cdc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/sink"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/task"
	"github.com/conveyor-dev/conveyor/runtime/task/tasktest"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// registryConverters are connector settings: keys and values of a
// converter class with the schema registry at url.
func registryConverters(class, url string) map[string]string {
	return map[string]string{
		"key.converter": class, "key.converter.schema.registry.url": url,
		"value.converter": class, "value.converter.schema.registry.url": url,
	}
}

// The schema registry converters, by Confluent's class names.
var registryClasses = []string{"io.confluent.connect.avro.AvroConverter", "io.confluent.connect.json.JsonSchemaConverter",
	"io.confluent.connect.protobuf.ProtobufConverter"}

// failures records the traces of failed tasks.
type failures struct {
	mu     sync.Mutex
	traces []string
}

func (f *failures) reporter(t *testing.T, what string, expectFailure bool) task.StatusReporter {
	return task.StatusFunc(func(id task.ID, s task.State, trace string) {
		if s != task.StateFailed {
			return
		}
		if !expectFailure {
			t.Errorf("%s task failed: %s", what, trace)
		}
		f.mu.Lock()
		f.traces = append(f.traces, trace)
		f.mu.Unlock()
	})
}

func (f *failures) all() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.traces, "\n")
}

// startRegistrySource runs the CDC source with converters of class.
func startRegistrySource(t *testing.T, e *env, class, registry string, status task.StatusReporter, mayFail bool) {
	t.Helper()
	for k, v := range registryConverters(class, registry) {
		e.config[k] = v
	}
	cfgs, _ := taskConfigs(t, e.config, 1)
	src, err := task.New(task.Spec{
		Common: task.Common{ID: task.ID{Connector: "cdc", Task: 0}, Config: cfgs[0], Kafka: e.opts,
			Status: status, Logger: testLogger(t), OffsetFlushInterval: 100 * time.Millisecond},
		Plugin: Plugin(), Connector: e.config, Offsets: store.TaskOffsets{Store: e.offsets},
	})
	if mayFail {
		tasktest.StartMayFail(t, src, err)
	} else {
		tasktest.Start(t, src, err)
	}
	e.waitSlotActive("cdc_slot")
}

// startRegistrySink runs the PostgreSQL sink on topic into table with
// converters of class and auto.evolve.
func startRegistrySink(t *testing.T, e *env, class, registry, topic, table string, status task.StatusReporter) {
	t.Helper()
	cfg := map[string]string{
		"name": "copy", "connector.class": "PostgresSink", "topics": topic,
		"connection.url": e.url, "table.name.format": table, "insert.mode": "upsert",
		"pk.mode": "record_key", "delete.enabled": "true", "auto.evolve": "true",
		"transforms": "unwrap", "transforms.unwrap.type": "unwrap",
	}
	for k, v := range registryConverters(class, registry) {
		cfg[k] = v
	}
	if res := plugin.ValidateConfig(context.Background(), sink.Plugin(), cfg); res.ErrorCount != 0 {
		t.Fatalf("sink config refused: %+v", res.Errors())
	}
	snk, err := task.New(task.Spec{
		Common: task.Common{ID: task.ID{Connector: "copy", Task: 0}, Config: cfg, Kafka: e.opts,
			Status: status, Logger: testLogger(t), OffsetFlushInterval: 100 * time.Millisecond},
		Plugin: sink.Plugin(), Connector: cfg,
	})
	tasktest.Start(t, snk, err)
}

// avroTypesColumns are the columns of every type the PostgreSQL
// connectors map (pgcommon.MapColumn), the same as its own round trip.
const avroTypesColumns = `id bigint PRIMARY KEY, i2 smallint, i4 integer NOT NULL, f4 real, f8 double precision, b boolean,
	t text, v varchar(10), c char(3), nm name, u uuid, js json, j jsonb, by bytea, n numeric(10,2), nu numeric,
	d date, tm time, ts timestamp, tz timestamptz, iv interval, arr int[]`

// PostgreSQL CDC → Avro (and JSON Schema, Protobuf) topic → PostgreSQL sink: every
// column of every type arrives equal (times and timestamps at millisecond precision, the
// precision of Connect's Time and Timestamp, as with JSON). A column added
// mid-stream registers a second version of the value schema, and the
// sink's table gains the column (auto.evolve).
func TestRegistryConvertersCarryEveryTypeToThePostgresSink(t *testing.T) {
	for _, class := range registryClasses {
		t.Run(class[strings.LastIndex(class, ".")+1:], func(t *testing.T) { carryEveryType(t, class) })
	}
}

func carryEveryType(t *testing.T, class string) {
	e := newEnv(t, map[string]string{"table.include.list": "public.types"})
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{})
	e.exec("CREATE TABLE types ("+avroTypesColumns+")",
		"CREATE TABLE types_copy ("+avroTypesColumns+")",
		`INSERT INTO types VALUES
		(1, -7, 42, 1.5, 2.25, true, 'héllo', 'v', 'ab', 'nom', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"b": [1, 2]}', '{"a": 1}', '\x00ff', -12.30, 3.14159,
		 '2024-02-29', '13:14:15.123', '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.5+02', '1 day 02:03:04', '{1,2}'),
		(2, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`)
	var fails failures
	startRegistrySource(t, e, class, reg.URL, fails.reporter(t, "source", false), false)
	startRegistrySink(t, e, class, reg.URL, "pg.public.types", "types_copy", fails.reporter(t, "sink", false))

	count := func(table string) string { return pgtest.QueryString(t, e.url, "SELECT count(*)::text FROM "+table) }
	testkit.EventuallyTrue(t, 30*time.Second, "2 rows in types_copy", func() bool { return count("types_copy") == "2" })
	e.exec(`INSERT INTO types VALUES (3, 32767, -2147483648, -0.25, 1e300, false, '', 'x', 'xyz', 'n', '00000000-0000-0000-0000-000000000000', '[]', '{}', '\x', 99999999.99, -0.000001,
		 '1970-01-01', '00:00:00', '1969-12-31 23:59:59.999', '2038-01-19 03:14:08Z', '-3 mons', '{}')`)
	testkit.EventuallyTrue(t, 30*time.Second, "3 rows in types_copy", func() bool { return count("types_copy") == "3" })
	compareTables(t, e.url, "types", "types_copy")

	// Evolution: a column added mid-stream.
	cl, err := sr.NewClient(sr.URLs(reg.URL))
	if err != nil {
		t.Fatal(err)
	}
	versions := func() []int {
		vs, _ := cl.SubjectVersions(context.Background(), "pg.public.types-value")
		return vs
	}
	if vs := versions(); !slices.Equal(vs, []int{1}) {
		t.Fatalf("value schema versions before the change: %v", vs)
	}
	e.exec("ALTER TABLE types ADD COLUMN added text", "INSERT INTO types (id, i4, added) VALUES (4, 4, 'new column')")
	testkit.EventuallyTrue(t, 30*time.Second, "row 4 with its new column in types_copy", func() bool {
		return pgtest.QueryString(t, e.url, "SELECT coalesce((SELECT count(*)::text FROM information_schema.columns WHERE table_name = 'types_copy' AND column_name = 'added'), '0')") == "1" &&
			pgtest.QueryString(t, e.url, "SELECT coalesce((SELECT added FROM types_copy WHERE id = 4), '-')") == "new column"
	})
	if vs := versions(); !slices.Equal(vs, []int{1, 2}) {
		t.Fatalf("value schema versions after the change: %v, want [1 2]", vs)
	}
	compareTables(t, e.url, "types", "types_copy")
	if f := fails.all(); f != "" {
		t.Fatal(f)
	}
}

// compareTables compares two tables of the same columns row by row and
// column by column, naming each column that differs.
func compareTables(t *testing.T, url, a, b string) {
	t.Helper()
	cols := strings.Split(pgtest.QueryString(t, url, fmt.Sprintf(
		"SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = '%s'", a)), ",")
	for _, c := range cols {
		q := fmt.Sprintf(`SELECT coalesce(string_agg(a.id::text || ': ' || coalesce(a.%[1]s::text, 'NULL') || ' vs ' || coalesce(b.%[1]s::text, 'NULL'), '; '), '')
			FROM %[2]s a FULL JOIN %[3]s b USING (id) WHERE a.%[1]s::text IS DISTINCT FROM b.%[1]s::text`, `"`+c+`"`, a, b)
		if diff := pgtest.QueryString(t, url, q); diff != "" {
			t.Errorf("column %s differs: %s", c, diff)
		}
	}
}

// A schema change the registry refuses (a required column without a
// default breaks BACKWARD compatibility) fails the source task with the
// registry's message. The compatibility check is a stand-in layer.
func TestAvroRegistryRefusalFailsTheTaskStandin(t *testing.T) {
	e := newEnv(t, map[string]string{"table.include.list": "public.items"})
	reg := servers.For(t).SchemaRegistry(servers.SchemaRegistryOptions{Compatibility: "BACKWARD"})
	e.exec("CREATE TABLE items (id int PRIMARY KEY, name text)", "INSERT INTO items VALUES (1, 'apple')")
	var fails failures
	startRegistrySource(t, e, registryClasses[0], reg.URL, fails.reporter(t, "source", true), true)
	cl, err := sr.NewClient(sr.URLs(reg.URL))
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 30*time.Second, "the first value schema registered", func() bool {
		vs, _ := cl.SubjectVersions(context.Background(), "pg.public.items-value")
		return len(vs) == 1
	})
	// A string column becomes a number: old records cannot be read with
	// the new schema.
	e.exec("ALTER TABLE items ALTER COLUMN name TYPE bigint USING length(name)", "INSERT INTO items VALUES (2, 4)")
	testkit.EventuallyTrue(t, 30*time.Second, "the source task failed", func() bool { return fails.all() != "" })
	if f := fails.all(); !strings.Contains(f, "incompatible with an earlier schema") || !strings.Contains(f, "409") {
		t.Fatalf("the failure does not carry the registry's message:\n%s", f)
	}
}
