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
	"encoding/json"
	"testing"

	"github.com/jackc/pglogrepl"
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
