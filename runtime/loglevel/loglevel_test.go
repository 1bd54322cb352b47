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

package loglevel

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSetAtAnswersOnlyTheLoggersItChanged: as Kafka Connect 4's Loggers, a
// level set on a name changes it and the loggers under it with a level of
// their own, answers only those whose level changed, and leaves the last
// change of the others as it was.
func TestSetAtAnswersOnlyTheLoggersItChanged(t *testing.T) {
	l := New(slog.LevelInfo)
	t0 := time.UnixMilli(1_000)
	t1 := time.UnixMilli(2_000)
	steps := []struct {
		name  string
		level slog.Level
		at    time.Time
		want  []string
	}{
		{"connector.orders", slog.LevelDebug, t0, []string{"connector.orders"}},
		{"connector", slog.LevelDebug, t1, []string{"connector"}},               // orders already DEBUG: unchanged
		{"rest", slog.LevelInfo, t1, []string{"rest"}},                          // a new logger of its own, even at root's level
		{"rest", slog.LevelInfo, t1, []string{}},                                // already INFO
		{"root", slog.LevelInfo, t1, []string{"connector", "connector.orders"}}, // root and rest already INFO
		{"root", slog.LevelWarn, t1, []string{"connector", "connector.orders", "rest", "root"}},
	}
	for _, s := range steps {
		if got := l.SetAt(s.name, s.level, s.at); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Errorf("SetAt(%s, %s) = %v, want %v", s.name, LevelName(s.level), got, s.want)
		}
	}
	l2 := New(slog.LevelInfo)
	l2.SetAt("connector.orders", slog.LevelDebug, t0)
	l2.SetAt("connector", slog.LevelDebug, t1)
	if lg, _ := l2.Get("connector.orders"); !lg.LastModified.Equal(t0) {
		t.Errorf("connector.orders last change = %v, want %v (its level did not change)", lg.LastModified, t0)
	}
	if got := l2.Effective("connector.orders.task"); got != slog.LevelDebug {
		t.Errorf("effective level under connector.orders = %s", LevelName(got))
	}
}

// TestNameMapsKafkaNamesAndRefusesUnknownOnes: the names /admin/loggers
// takes, Kafka Connect's mapped onto the worker's, and the refusal of a
// name no record carries.
func TestNameMapsKafkaNamesAndRefusesUnknownOnes(t *testing.T) {
	for in, want := range map[string]string{
		"root": Root, "ROOT": Root, "rest": REST, "kgo": Kafka, "connector": Connector, "connector.orders-v2": "connector.orders-v2",
		"org.apache.kafka.connect.runtime.rest":                           REST,
		"org.apache.kafka.connect.runtime.rest.resources.LoggingResource": REST,
		"org.apache.kafka.clients":                                        Kafka,
		"org.apache.kafka.clients.consumer.internals.Fetcher":             Kafka,
	} {
		if got, err := Name(in); err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "connector.", "org.apache.kafka.connect", "org.apache.kafka.connect.runtime.restx", "io.debezium", "Rest"} {
		_, err := Name(in)
		if err == nil || !strings.Contains(err.Error(), "use root") || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("Name(%q): %v, want an error naming it and the loggers to use", in, err)
		}
	}
}
