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
	"testing"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// A position survives the offset store's JSON round trip (numbers come
// back as float64; the LSN is a string, so large LSNs keep every bit) and
// says which changes were delivered.
func TestPositionRoundTripAndCovers(t *testing.T) {
	p := position{lsn: pglogrepl.LSN(0xFFFF_FFFF_0000_0001), seq: 7}
	b, err := json.Marshal(p.offset())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	got, err := parsePosition(m)
	if err != nil || got != p {
		t.Fatalf("round trip of %+v: %+v, %v (%s)", p, got, err, b)
	}
	for _, c := range []struct {
		lsn  pglogrepl.LSN
		seq  int64
		want bool
	}{
		{p.lsn - 1, 100, true}, {p.lsn, 7, true}, {p.lsn, 8, false}, {p.lsn + 1, 1, false},
	} {
		if p.covers(c.lsn, c.seq) != c.want {
			t.Errorf("covers(%s, %d) = %v", c.lsn, c.seq, !c.want)
		}
	}
	running := position{lsn: 5, snapshot: true}
	if running.covers(1, 1) {
		t.Error("an unfinished snapshot covers streamed changes")
	}
	if r, err := parsePosition(running.offset()); err != nil || !r.snapshot {
		t.Errorf("snapshot marker lost: %+v %v", r, err)
	}
	if _, err := parsePosition(map[string]any{"lsn": 12.0}); err == nil {
		t.Error("a numeric lsn was accepted")
	}
}

// A key-changing update emits two records for one change: the delete
// carries the position before the change (a restart after storing it
// emits the whole change again), the create the change's own (storing it
// covers the change).
func TestKeyChangeRecordsPositions(t *testing.T) {
	tm := pgtype.NewMap()
	s := settings{topicPrefix: "pg."}
	r, err := newRelation(s, 42, "public", "k", []column{newColumn(tm, "id", pgtype.Int4OID, -1), newColumn(tm, "v", pgtype.TextOID, -1)}, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	st := &streamer{s: s, out: make(chan *plugin.SourceRecord, 4), rels: &relations{byOID: map[uint32]*relation{42: r}},
		inTx: true, commitLSN: pglogrepl.LSN(0x5000), seq: 2, partition: map[string]any{PartitionSlot: "s"}}
	before, _ := r.rowFromText([][]byte{[]byte("1"), []byte("a")})
	after, _ := r.rowFromText([][]byte{[]byte("2"), []byte("a")})
	if !r.keyChanged(before, after) || r.keyChanged(after, after) {
		t.Fatal("keyChanged does not tell 1 -> 2 from 2 -> 2")
	}
	err = st.change(context.Background(), 42, pglogrepl.LSN(0x4000), func(*relation) ([]change, error) {
		return []change{{op: OpDelete, before: before}, {op: OpCreate, after: after}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	del, cre := <-st.out, <-st.out
	pd, err := parsePosition(del.SourceOffset)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := parsePosition(cre.SourceOffset)
	if err != nil {
		t.Fatal(err)
	}
	if pd.covers(0x5000, 3) || !pc.covers(0x5000, 3) || !pd.covers(0x5000, 2) {
		t.Fatalf("delete at %+v, create at %+v: want the delete before change 3 of the transaction, the create covering it", pd, pc)
	}
}
