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

package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestEffectiveTasks(t *testing.T) {
	cases := []struct {
		max, limit int
		reason     Reason
		want       int
		wantReason Reason
	}{
		{10, 4, TopicPartitions, 4, TopicPartitions},
		{3, 4, TopicPartitions, 3, TasksMax},
		{4, 4, Files, 4, TasksMax},
		{5, NoLimit, TasksMax, 5, TasksMax},
		{5, -7, "", 5, TasksMax},
		{0, 2, Ranges, 1, TasksMax},
		{8, 1, SingleReader, 1, SingleReader},
		{8, 0, Files, 0, Files},
		{8, 2, "", 2, TasksMax},
	}
	for _, c := range cases {
		n, r := EffectiveTasks(c.max, c.limit, c.reason)
		if n != c.want || r != c.wantReason {
			t.Errorf("EffectiveTasks(%d,%d,%s) = %d,%s want %d,%s", c.max, c.limit, c.reason, n, r, c.want, c.wantReason)
		}
	}
	for _, r := range []Reason{TopicPartitions, Tables, Files, Ranges, SingleReader} {
		if string(r) != fmt.Sprint(r) {
			t.Fatal(r)
		}
	}
}

func TestCheckTaskConfigs(t *testing.T) {
	err := CheckTaskConfigs("c", 2, make([]map[string]string, 3))
	if !errors.Is(err, ErrTooManyTaskConfigs) || !strings.Contains(err.Error(), "tasks.max=2") {
		t.Fatal(err)
	}
	if CheckTaskConfigs("c", 3, make([]map[string]string, 3)) != nil {
		t.Fatal("3 of 3 refused")
	}
}

func TestRetriable(t *testing.T) {
	base := errors.New("busy")
	err := fmt.Errorf("put: %w", Retriable(base))
	if !IsRetriable(err) || !errors.Is(err, base) || err.Error() != "put: busy" {
		t.Fatal(err)
	}
	if IsRetriable(base) || Retriable(nil) != nil {
		t.Fatal("plain error is retriable")
	}
}

var testSpec = ConfigSpec{Fields: []ConfigField{
	{Name: "file", Type: TypeString, Required: true, Group: "File", Doc: "path"},
	{Name: "batch.size", Type: TypeInt, Default: "100", Group: "File", Validator: AtLeast(1), Max: 1000},
	{Name: "ratio", Type: TypeDouble, Default: "0.5", Group: "File", Validator: Between(0, 1), Max: 1},
	{Name: "big", Type: TypeLong, Default: "5000000000", Group: "File", Max: 1e12},
	{Name: "on", Type: TypeBoolean, Default: "true", Group: "File"},
	{Name: "mode", Type: TypeString, Default: "a", Group: "Other", Validator: OneOf("a", "b"), Recommended: []string{"a", "b"}},
	{Name: "files", Type: TypeList, Group: "Other"},
	{Name: "secret", Type: TypePassword, Group: "Other"},
}}

func TestSpecParse(t *testing.T) {
	c, err := testSpec.Parse(map[string]string{"file": " /x ", "files": "a, b,,c ", "secret": "s3cr3t", "on": "FALSE", "extra.key": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if c.String("file") != "/x" || c.Int("batch.size") != 100 || c.Double("ratio") != 0.5 || c.Long("big") != 5000000000 ||
		c.Bool("on") || c.String("mode") != "a" || strings.Join(c.List("files"), "|") != "a|b|c" || c.Password("secret").Value() != "s3cr3t" {
		t.Fatalf("parsed %+v", c)
	}
	if fmt.Sprint(c.Password("secret")) != HiddenValue {
		t.Fatal("password printed")
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "p", c.Password("secret"))
	if strings.Contains(b.String(), "s3cr3t") {
		t.Fatal("password logged:", b.String())
	}
	if v, ok := c.Raw("extra.key"); !ok || v != "v" {
		t.Fatal("raw extra key lost")
	}

	_, err = testSpec.Parse(map[string]string{"batch.size": "0", "ratio": "x", "mode": "c", "on": "yes"})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("want *ConfigError, got %v", err)
	}
	got := map[string]string{}
	for _, f := range ce.Fields {
		got[f.Name] = f.Message
	}
	want := map[string]string{
		"file":       `Missing required configuration "file" which has no default value.`,
		"batch.size": "Invalid value 0 for configuration batch.size: Value must be at least 1",
		"ratio":      "Invalid value x for configuration ratio: not a number of type DOUBLE",
		"mode":       "Invalid value c for configuration mode: String must be one of: a, b",
		"on":         "Invalid value yes for configuration on: expected value to be either true or false",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("extra errors: %v", got)
	}
}

func TestSpecValidateShape(t *testing.T) {
	vals := testSpec.Validate(map[string]string{"file": "f", "secret": "pw"})
	if len(vals) != len(testSpec.Fields) {
		t.Fatal(len(vals))
	}
	byName := map[string]ConfigValue{}
	for _, v := range vals {
		byName[v.Name] = v
		if !v.Visible || v.RecommendedValues == nil {
			t.Fatalf("%+v", v)
		}
	}
	if *byName["batch.size"].Value != "100" || byName["files"].Value != nil || *byName["secret"].Value != HiddenValue {
		t.Fatalf("%+v", byName)
	}
	if len(byName["mode"].RecommendedValues) != 2 {
		t.Fatal(byName["mode"])
	}
	if g := testSpec.Groups(); strings.Join(g, ",") != "File,Other" {
		t.Fatal(g)
	}
	if testSpec.Order("ratio") != 3 || testSpec.Order("files") != 2 {
		t.Fatal(testSpec.Order("ratio"), testSpec.Order("files"))
	}
}

type fakeConnector struct {
	extra []FieldError
}

func (f *fakeConnector) Validate(context.Context, map[string]string) []FieldError { return f.extra }
func (f *fakeConnector) Start(context.Context, ConnectorContext, map[string]string) error {
	return nil
}
func (f *fakeConnector) NaturalLimit(context.Context) (int, Reason, error) {
	return NoLimit, TasksMax, nil
}
func (f *fakeConnector) TaskConfigs(int) ([]map[string]string, error) { return nil, nil }
func (f *fakeConnector) Stop() error                                  { return nil }

type fakeSink struct{}

func (fakeSink) Start(context.Context, SinkTaskContext, map[string]string) error { return nil }
func (fakeSink) Open(context.Context, []TopicPartition) error                    { return nil }
func (fakeSink) Put(context.Context, []*SinkRecord) error                        { return nil }
func (fakeSink) Flush(context.Context, map[TopicPartition]int64) error           { return nil }
func (fakeSink) Close(context.Context, []TopicPartition) error                   { return nil }
func (fakeSink) Stop() error                                                     { return nil }

func sinkPlugin(extra []FieldError) Plugin {
	return Plugin{Class: "dev.example.TestSinkConnector", Kind: KindSink, Version: "1",
		Spec:         ConfigSpec{Fields: []ConfigField{{Name: "file", Type: TypeString, Required: true, Group: "File"}}},
		NewConnector: func() Connector { return &fakeConnector{extra: extra} },
		NewSinkTask:  func() SinkTask { return fakeSink{} },
	}
}

func TestValidateConfig(t *testing.T) {
	p := sinkPlugin([]FieldError{{Name: "file", Message: "not writable"}, {Name: "other.key", Message: "bad"}})
	res := ValidateConfig(context.Background(), p, map[string]string{
		"name": "s", "connector.class": "TestSink", "tasks.max": "0", "file": "/f",
	})
	errs := map[string][]string{}
	for _, fe := range res.Errors() {
		errs[fe.Name] = append(errs[fe.Name], fe.Message)
	}
	if res.ErrorCount != 5 {
		t.Fatalf("error count %d: %v", res.ErrorCount, errs)
	}
	if !strings.Contains(errs["tasks.max"][0], "at least 1") || len(errs["topics"]) != 1 || len(errs["topics.regex"]) != 1 ||
		errs["file"][0] != "not writable" || errs["other.key"][0] != "bad" {
		t.Fatalf("%v", errs)
	}
	if strings.Join(res.Groups, ",") != "Common,Transforms,Predicates,Error Handling,File" {
		t.Fatal(res.Groups)
	}
	if res.Configs[0].Definition.Name != "name" || res.Configs[0].Order != 1 {
		t.Fatal(res.Configs[0])
	}
	// The connector's Validate is skipped while its own fields are invalid.
	res = ValidateConfig(context.Background(), p, map[string]string{"name": "s", "connector.class": "x", "topics": "a"})
	if res.ErrorCount != 1 || res.Errors()[0].Name != "file" {
		t.Fatalf("%+v", res.Errors())
	}
	// Both topics and topics.regex.
	res = ValidateConfig(context.Background(), sinkPlugin(nil), map[string]string{"name": "s", "connector.class": "x", "file": "f", "topics": "a", "topics.regex": "b.*"})
	if res.ErrorCount != 2 {
		t.Fatalf("%+v", res.Errors())
	}
	res = ValidateConfig(context.Background(), sinkPlugin(nil), map[string]string{"name": "s", "connector.class": "x", "file": "f", "topics": "a"})
	if res.ErrorCount != 0 {
		t.Fatalf("%+v", res.Errors())
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	p := sinkPlugin(nil)
	p.Aliases = []string{"org.apache.kafka.connect.file.FileStreamSinkConnector"}
	if err := r.Register(p); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"dev.example.TestSinkConnector", "TestSinkConnector", "TestSink", "FileStreamSink", "org.apache.kafka.connect.file.FileStreamSinkConnector"} {
		if got, ok := r.Lookup(n); !ok || got.Class != p.Class {
			t.Errorf("lookup %q failed", n)
		}
	}
	if _, ok := r.Lookup("Nope"); ok {
		t.Fatal("lookup of unknown plugin")
	}
	if err := r.Register(p); err == nil || !strings.Contains(err.Error(), "already taken") {
		t.Fatal(err)
	}
	q := sinkPlugin(nil)
	q.Class = "dev.example.AnotherConnector"
	q.Kind = KindSource
	if err := r.Register(q); err == nil || !strings.Contains(err.Error(), "NewSourceTask") {
		t.Fatal(err)
	}
	q.Kind = KindSink
	q.Spec = ConfigSpec{Fields: []ConfigField{{Name: "tasks.max", Type: TypeInt}}}
	if err := r.Register(q); err == nil || !strings.Contains(err.Error(), "common connector field") {
		t.Fatal(err)
	}
	q.Spec = ConfigSpec{Fields: []ConfigField{{Name: "n", Type: TypeInt, Default: "x", Max: 10}}}
	if err := r.Register(q); err == nil || !strings.Contains(err.Error(), "default") {
		t.Fatal(err)
	}
	q.Spec = ConfigSpec{}
	if err := r.Register(q); err != nil {
		t.Fatal(err)
	}
	list := r.List()
	if len(list) != 2 || list[0].Class != "dev.example.AnotherConnector" {
		t.Fatal(list)
	}
}

type fakeCC struct {
	topics []string
	parts  map[string]int32
}

func (f fakeCC) Logger() *slog.Logger        { return slog.Default() }
func (f fakeCC) RequestTaskReconfiguration() {}
func (f fakeCC) RaiseError(error)            {}
func (f fakeCC) Go(func() error)             {}
func (f fakeCC) ListTopics(context.Context) ([]string, error) {
	return f.topics, nil
}
func (f fakeCC) TopicPartitions(_ context.Context, topics []string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, t := range topics {
		if n, ok := f.parts[t]; ok {
			out[t] = n
		}
	}
	return out, nil
}

func TestSinkNaturalLimit(t *testing.T) {
	cc := fakeCC{topics: []string{"orders.eu", "orders.us", "users"}, parts: map[string]int32{"orders.eu": 4, "orders.us": 2, "users": 3}}
	ctx := context.Background()
	n, r, err := SinkNaturalLimit(ctx, cc, map[string]string{"topics": "orders.eu, users, missing"})
	if err != nil || n != 7 || r != TopicPartitions {
		t.Fatal(n, r, err)
	}
	n, _, err = SinkNaturalLimit(ctx, cc, map[string]string{"topics.regex": "orders\\..*"})
	if err != nil || n != 6 {
		t.Fatal(n, err)
	}
	// The regex must match the whole name.
	n, _, err = SinkNaturalLimit(ctx, cc, map[string]string{"topics.regex": "orders"})
	if err != nil || n != 0 {
		t.Fatal(n, err)
	}
	if _, _, err := SinkNaturalLimit(ctx, cc, map[string]string{}); err == nil {
		t.Fatal("no topics accepted")
	}
}

func TestConfigFieldDefaults(t *testing.T) {
	f := ConfigField{Name: "x", Default: "5"}
	if *f.DefaultValue() != "5" || f.ImportanceOrDefault() != ImportanceMedium || f.WidthOrDefault() != WidthNone || f.DisplayNameOrDefault() != "x" {
		t.Fatal(f)
	}
	if (ConfigField{Name: "y", Required: true}).DefaultValue() != nil || (ConfigField{Name: "z"}).DefaultValue() != nil {
		t.Fatal("default of a field without one")
	}
}
