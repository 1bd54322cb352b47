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
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/pgtest"
)

// errorsOf validates a config and returns the messages per field.
func errorsOf(t *testing.T, config map[string]string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]string{}
	for _, fe := range plugin.ValidateConfig(ctx, Plugin(), config).Errors() {
		out[fe.Name] += fe.Message + "\n"
	}
	return out
}

func wantError(t *testing.T, errs map[string]string, field string, parts ...string) {
	t.Helper()
	msg, ok := errs[field]
	if !ok {
		t.Errorf("no error on %s; errors: %v", field, errs)
		return
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("error on %s %q lacks %q", field, msg, p)
		}
	}
}

// A server without wal_level=logical is refused with the setting and the
// fix named.
func TestValidateWalLevel(t *testing.T) {
	t.Parallel() // a second server takes seconds to start; let the others run meanwhile
	if err := CheckWalLevel("logical"); err != nil {
		t.Fatal(err)
	}
	replica, err := pgtest.Start(pgtest.Options{Settings: map[string]string{"wal_level": "replica"}})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Stop()
	cfg := map[string]string{"name": "cdc", "connector.class": Class, "topic.prefix": "pg.", "connection.url": replica.URL("postgres")}
	errs := errorsOf(t, cfg)
	wantError(t, errs, "connection.url", "wal_level=replica", "wal_level=logical", "ALTER SYSTEM SET wal_level = logical", "restart")
	if strings.Contains(errs["connection.url"], replica.Password) {
		t.Fatalf("the password leaked into %q", errs["connection.url"])
	}
}

// Bad URL, missing privilege, missing table, a slot in use and a missing
// publication each get a message on their field; a good config has none.
func TestValidateProblems(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("CREATE TABLE t (id int PRIMARY KEY)", "CREATE TABLE nokey (v int)",
		"CREATE ROLE norepl LOGIN PASSWORD 'sekret-pw'", "CREATE PUBLICATION busy_pub FOR TABLE t")
	base := func(extra map[string]string) map[string]string {
		c := map[string]string{"name": "cdc", "connector.class": Class, "topic.prefix": "pg.", "connection.url": e.url, "table.include.list": "t"}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	if errs := errorsOf(t, base(nil)); len(errs) != 0 {
		t.Fatalf("a good config has errors: %v", errs)
	}

	wantError(t, errorsOf(t, base(map[string]string{"connection.url": "mysql://db:3306/x"})), "connection.url", "mysql")

	errs := errorsOf(t, base(map[string]string{"connection.user": "norepl", "connection.password": "sekret-pw"}))
	wantError(t, errs, "connection.user", "REPLICATION", `ALTER ROLE "norepl" REPLICATION`)
	for f, m := range errs {
		if strings.Contains(m, "sekret-pw") {
			t.Errorf("the password leaked into the error on %s: %q", f, m)
		}
	}

	wantError(t, errorsOf(t, base(map[string]string{"table.include.list": "public.t,public.nope"})), "table.include.list", "public.nope", "does not exist")
	wantError(t, errorsOf(t, base(map[string]string{"table.include.list": "nokey"})), "table.include.list", "REPLICA IDENTITY FULL")
	wantError(t, errorsOf(t, base(map[string]string{"publication.autocreate": "false", "publication.name": "nopub"})), "publication.name", "nopub", "does not exist")

	// A slot read by another connection.
	e.exec("SELECT pg_create_logical_replication_slot('busy', 'pgoutput')")
	repl, err := newConn(map[string]string{"connection.url": e.url}).connectReplication(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer repl.Close(context.Background())
	if err := pglogrepl.StartReplication(context.Background(), repl, "busy", 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names 'busy_pub'"}}); err != nil {
		t.Fatal(err)
	}
	e.waitSlotActive("busy")
	wantError(t, errorsOf(t, base(map[string]string{"slot.name": "busy"})), "slot.name", "busy", "in use by server process")
	if errs := errorsOf(t, base(map[string]string{"slot.name": "Bad-Name"})); errs["slot.name"] == "" {
		t.Errorf("an invalid slot name passed: %v", errs)
	}
}

// tombstones.on.delete is in the config definition (default true) and a
// value other than true or false is refused on its key.
func TestValidateTombstonesOnDelete(t *testing.T) {
	cfg := map[string]string{"name": "cdc", "connector.class": Class, "topic.prefix": "pg.", "connection.url": "postgres://u@127.0.0.1:1/db"}
	res := plugin.ValidateConfig(context.Background(), Plugin(), cfg)
	found := false
	for _, c := range res.Configs {
		if c.Definition.Name == KeyTombstonesOnDelete {
			found = true
			if c.Definition.Type != plugin.TypeBoolean || c.Value.Value == nil || *c.Value.Value != "true" {
				t.Fatalf("%s: type %s, value %v; want a BOOLEAN defaulting to true", KeyTombstonesOnDelete, c.Definition.Type, c.Value.Value)
			}
		}
	}
	if !found {
		t.Fatalf("%s is not in the config definition", KeyTombstonesOnDelete)
	}
	if s, err := parseSettings(cfg); err != nil || !s.tombstones {
		t.Fatalf("default: tombstones %v, %v; want true", s.tombstones, err)
	}
	cfg[KeyTombstonesOnDelete] = "False"
	if s, err := parseSettings(cfg); err != nil || s.tombstones {
		t.Fatalf("False: tombstones %v, %v; want false", s.tombstones, err)
	}
	cfg[KeyTombstonesOnDelete] = "yes"
	errs := map[string]string{}
	for _, fe := range plugin.ValidateConfig(context.Background(), Plugin(), cfg).Errors() {
		errs[fe.Name] += fe.Message
	}
	wantError(t, errs, KeyTombstonesOnDelete, "yes", KeyTombstonesOnDelete, "true or false")
	if _, err := parseSettings(cfg); err == nil || !strings.Contains(err.Error(), KeyTombstonesOnDelete) {
		t.Fatalf("parseSettings accepted %s=yes: %v", KeyTombstonesOnDelete, err)
	}
}
