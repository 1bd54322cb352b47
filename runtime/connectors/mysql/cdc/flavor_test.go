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
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// MySQL 8 cannot run here (Debian ships MariaDB only): these tests check the
// MySQL flavor's parts that need no server: detection, the GTID set
// offsets, how a stream resumes, and the GTID bookkeeping over the events
// go-mysql decodes from a MySQL 8 binlog. The MariaDB flavor runs against a
// real server in cdc_test.go.

func TestClassifyFlavor(t *testing.T) {
	for _, tc := range []struct {
		version, logBin, format, gtidMode string
		mariadb, gtid                     bool
		err                               string
	}{
		{"10.11.19-MariaDB-0+deb12u1-log", "1", "ROW", "", true, true, ""},
		{"8.0.36", "1", "ROW", "ON", false, true, ""},
		{"8.4.3-commercial", "1", "ROW", "ON", false, true, ""},
		{"8.0.36-0ubuntu0.22.04.1", "1", "ROW", "ON_PERMISSIVE", false, false, ""},
		{"8.0.36", "1", "ROW", "OFF", false, false, ""},
		{"5.7.44-log", "1", "ROW", "", false, false, ""},
		{"8.0.36", "0", "ROW", "ON", false, false, "binary log is off"},
		{"8.0.36", "1", "MIXED", "ON", false, false, "binlog_format is MIXED"},
	} {
		srv, err := classify(tc.version, tc.logBin, tc.format, tc.gtidMode)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.version, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.version, err)
			continue
		}
		if srv.mariadb != tc.mariadb || srv.gtid != tc.gtid {
			t.Errorf("%s gtid_mode=%q: mariadb=%v gtid=%v, want %v %v", tc.version, tc.gtidMode, srv.mariadb, srv.gtid, tc.mariadb, tc.gtid)
		}
		wantFlavor := "mysql"
		if tc.mariadb {
			wantFlavor = "mariadb"
		}
		if srv.flavor() != wantFlavor {
			t.Errorf("%s: flavor %s, want %s", tc.version, srv.flavor(), wantFlavor)
		}
	}
}

func TestStatusAndExecutedQueries(t *testing.T) {
	for _, tc := range []struct {
		version, status, executed string
	}{
		{"10.11.19-MariaDB-log", "SHOW MASTER STATUS", "SELECT @@GLOBAL.gtid_binlog_pos"},
		{"8.0.36", "SHOW MASTER STATUS", "SELECT @@GLOBAL.gtid_executed"},
		{"8.2.0", "SHOW BINARY LOG STATUS", "SELECT @@GLOBAL.gtid_executed"},
		{"8.4.3-commercial", "SHOW BINARY LOG STATUS", "SELECT @@GLOBAL.gtid_executed"},
		{"9.1.0", "SHOW BINARY LOG STATUS", "SELECT @@GLOBAL.gtid_executed"},
	} {
		srv, err := classify(tc.version, "ON", "ROW", "ON")
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.statusQuery(); got != tc.status {
			t.Errorf("%s: %q, want %q", tc.version, got, tc.status)
		}
		if got := srv.executedQuery(); got != tc.executed {
			t.Errorf("%s: %q, want %q", tc.version, got, tc.executed)
		}
	}
}

const (
	uuidA = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	uuidB = "4f5e6d7c-1a2b-11ee-8c99-0242ac120002"
)

// A MySQL position goes through the offsets topic (JSON) and comes back the
// same, and the stream resumes from its GTID set.
func TestMySQLGTIDOffsetRoundTrip(t *testing.T) {
	mysql8 := server{version: "8.0.36", gtid: true}
	p := position{gtids: uuidA + ":1-5," + uuidB + ":1-3:7-9", gtid: uuidA + ":6", file: "binlog.000003", pos: 1234, row: 2}
	b, err := json.Marshal(p.offset())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	got, err := parsePosition(m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip through %s: %+v, want %+v", b, got, p)
	}
	gset, byGTID, err := resumeFrom(mysql8, got)
	if err != nil {
		t.Fatal(err)
	}
	if !byGTID {
		t.Errorf("a MySQL server with gtid_mode=ON resumes from file and position, want from the GTID set")
	}
	for _, part := range []string{uuidA + ":1-5", uuidB + ":1-3:7-9"} {
		if !strings.Contains(gset.String(), part) {
			t.Errorf("resumed GTID set %q lacks %q", gset, part)
		}
	}

	// Without GTIDs (gtid_mode OFF): file and position.
	if _, byGTID, err := resumeFrom(server{version: "8.0.36"}, position{file: "binlog.000003", pos: 4}); err != nil || byGTID {
		t.Errorf("gtid_mode OFF: byGTID=%v err=%v, want file and position", byGTID, err)
	}
	// A MariaDB position given to a MySQL server (the connector moved to
	// another server) is refused, naming the set and the flavor.
	_, _, err = resumeFrom(mysql8, position{gtids: "0-1-253", file: "binlog.000001", pos: 4})
	if err == nil || !strings.Contains(err.Error(), `"0-1-253"`) || !strings.Contains(err.Error(), "mysql") {
		t.Errorf("a MariaDB GTID set resumed on MySQL: %v, want an error naming the set and the flavor", err)
	}
}

// TestMySQLGTIDTrackingStandin feeds the streamer the events go-mysql
// decodes from a MySQL 8 binlog (built by hand: no MySQL server runs here)
// and checks the GTID bookkeeping that offsets and resumes rest on.
func TestMySQLGTIDTrackingStandin(t *testing.T) {
	srv := server{version: "8.0.36", gtid: true}
	stored := position{gtids: uuidA + ":1-5", gtid: uuidA + ":6", file: "binlog.000003", pos: 400, row: 2}
	gset, _, err := resumeFrom(srv, stored)
	if err != nil {
		t.Fatal(err)
	}
	st := &streamer{srv: srv, gset: gset, file: stored.file, skip: &stored, captured: map[string]bool{}, tables: map[string]*table{}}
	sid := uuid.MustParse(uuidA)
	at := uint32(400)
	ev := func(e replication.Event, size uint32) *replication.BinlogEvent {
		at += size
		return &replication.BinlogEvent{Header: &replication.EventHeader{LogPos: at, EventSize: size, ServerID: 7}, Event: e}
	}
	gtidEv := func(gno int64) *replication.BinlogEvent { return ev(&replication.GTIDEvent{SID: sid[:], GNO: gno}, 79) }
	begin := func() *replication.BinlogEvent { return ev(&replication.QueryEvent{Query: []byte("BEGIN")}, 60) }
	xid := func() *replication.BinlogEvent { return ev(&replication.XIDEvent{XID: 1}, 31) }
	handle := func(e *replication.BinlogEvent) {
		t.Helper()
		if _, err := st.handle(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}

	// The stored transaction again: recognised (its rows up to 2 are
	// skipped), and the skip ends with it.
	handle(gtidEv(6))
	if st.tx.gtid != uuidA+":6" || st.tx.gtidsPre != uuidA+":1-5" || st.tx.pos != 400 {
		t.Fatalf("transaction 6: %+v", st.tx)
	}
	if !st.skip.sameTx(st.tx.gtid, st.tx.file, st.tx.pos) {
		t.Fatalf("the stored transaction %s is not recognised as %s", stored.gtid, st.tx.gtid)
	}
	handle(begin())
	handle(xid())
	if st.skip != nil || st.gset.String() != uuidA+":1-6" {
		t.Fatalf("after transaction 6: skip=%v set=%s, want no skip and %s:1-6", st.skip, st.gset, uuidA)
	}

	// A compressed transaction (binlog_transaction_compression): its
	// inner events count as the transaction's own.
	handle(gtidEv(7))
	handle(ev(&replication.TransactionPayloadEvent{Events: []*replication.BinlogEvent{begin(), xid()}}, 120))
	if st.inTx || st.gset.String() != uuidA+":1-7" {
		t.Fatalf("after the compressed transaction 7: inTx=%v set=%s", st.inTx, st.gset)
	}
	payloadTx := st.tx

	// An anonymous transaction (gtid_mode ON_PERMISSIVE): tracked by its
	// start, the set unchanged.
	handle(ev(&replication.GTIDEvent{SID: make([]byte, 16), GNO: 0}, 79))
	if st.tx.gtid != "" || st.tx.pos == payloadTx.pos {
		t.Fatalf("anonymous transaction: %+v", st.tx)
	}
	handle(begin())
	handle(xid())
	if st.gset.String() != uuidA+":1-7" {
		t.Fatalf("after an anonymous transaction the set is %s, want %s:1-7", st.gset, uuidA)
	}

	// A tagged GTID (MySQL 8.4) is refused, naming the tag.
	tagged := ev(&replication.GtidTaggedLogEvent{GTIDEvent: replication.GTIDEvent{SID: sid[:], GNO: 8, Tag: "etl"}}, 90)
	if _, err := st.handle(context.Background(), tagged); err == nil || !strings.Contains(err.Error(), "AUTOMATIC:etl") {
		t.Fatalf("tagged GTID: %v, want an error naming the tag", err)
	}
}
