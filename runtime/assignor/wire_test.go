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

package assignor

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMetadataRoundTrip(t *testing.T) {
	for _, m := range []Metadata{
		{Version: Version, WorkerID: "10.0.0.1:8083"},
		{Version: Version, WorkerID: "w", URL: "http://10.0.0.1:8083", ConfigOffset: 42, Leaving: true, Departed: []string{"d", "e"},
			Revision: "7d9f8c6b5", Started: t0.Add(123 * time.Millisecond),
			Owned: Assignment{Connectors: []string{"a", "b"}, Tasks: append(tasksOf("b", 0, 7), tasksOf("a", 3)...)}},
	} {
		got, err := DecodeMetadata(EncodeMetadata(m))
		if err != nil {
			t.Fatalf("decoding %+v: %v", m, err)
		}
		if got.Version != Version || got.WorkerID != m.WorkerID || got.URL != m.URL || got.ConfigOffset != m.ConfigOffset ||
			got.Leaving != m.Leaving || !got.Owned.Equal(m.Owned) || !slices.Equal(got.Departed, m.Departed) ||
			got.Revision != m.Revision || !got.Started.Equal(m.Started) {
			t.Errorf("round trip of %+v gave %+v", m, got)
		}
		if want := m.Owned.Sorted(); !slicesEqualTasks(got.Owned, want) {
			t.Errorf("decoded owned %+v not sorted like %+v", got.Owned, want)
		}
	}
}

func slicesEqualTasks(a, b Assignment) bool {
	if len(a.Tasks) != len(b.Tasks) || len(a.Connectors) != len(b.Connectors) {
		return false
	}
	for i := range a.Tasks {
		if a.Tasks[i] != b.Tasks[i] {
			return false
		}
	}
	for i := range a.Connectors {
		if a.Connectors[i] != b.Connectors[i] {
			return false
		}
	}
	return true
}

func TestAssignmentRoundTrip(t *testing.T) {
	for _, a := range []SyncAssignment{
		{Version: Version},
		{Version: Version, Error: ErrorConfigMismatch, LeaderID: "m-1", LeaderURL: "http://l:8083", ConfigOffset: 9},
		{Version: Version, LeaderID: "m-1", ConfigOffset: 1 << 40, Delay: 2500 * time.Millisecond,
			Assigned: Assignment{Connectors: []string{"x"}, Tasks: tasksOf("x", 0, 1, 2)},
			Revoked:  Assignment{Tasks: tasksOf("y", 5)}},
		{Version: Version, LeaderState: &State{}},
		{Version: Version, LeaderState: &State{
			Workers: map[string]Assignment{"a": {Connectors: []string{"x"}, Tasks: tasksOf("x", 0, 2)}, "b": {}},
			Lost:    []LostWorker{{WorkerID: "c", Held: Assignment{Tasks: tasksOf("x", 1)}, Deadline: t0.Add(1234567 * time.Nanosecond)}},
			Left:    []string{"d"},
		}},
	} {
		got, err := DecodeAssignment(EncodeAssignment(a))
		if err != nil {
			t.Fatalf("decoding %+v: %v", a, err)
		}
		if !reflect.DeepEqual(got.LeaderState, a.LeaderState) {
			t.Errorf("leader state %+v came back as %+v", a.LeaderState, got.LeaderState)
		}
		if got.Version != Version || got.Error != a.Error || got.LeaderID != a.LeaderID || got.LeaderURL != a.LeaderURL ||
			got.ConfigOffset != a.ConfigOffset || got.Delay != a.Delay || !got.Assigned.Equal(a.Assigned) || !got.Revoked.Equal(a.Revoked) {
			t.Errorf("round trip of %+v gave %+v", a, got)
		}
	}
	// A delay below a millisecond is rounded up, never dropped.
	got, err := DecodeAssignment(EncodeAssignment(SyncAssignment{Delay: time.Microsecond}))
	if err != nil || got.Delay != time.Millisecond {
		t.Errorf("1µs delay decoded as %v, %v; want 1ms", got.Delay, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, wantMeta, wantSync string
	}{
		{"empty", "", "member metadata: empty", "assignment: empty"},
		{"garbage", "\x00\x01garbage", "not a JSON object", "not a JSON object"},
		{"json array", "[1,2]", "not a JSON object", "not a JSON object"},
		{"no version", `{"workerId":"w"}`, `no "version" field`, `no "version" field`},
		{"version 0", `{"version":0,"workerId":"w"}`, "version 0 is not a valid version", "version 0 is not a valid version"},
		{"newer version", `{"version":2,"workerId":"w"}`, "version 2 is newer than this worker reads (1)", "version 2 is newer"},
		{"wrong type", `{"version":1,"workerId":7,"configOffset":"x","assigned":1}`, "member metadata version 1: json", "assignment version 1: json"},
		{"negative task", `{"version":1,"workerId":"w","owned":{"tasks":{"c":[-1]}},"assigned":{"tasks":{"c":[-1]}}}`,
			`task -1 of connector "c"`, `assigned: task -1 of connector "c"`},
		{"empty connector", `{"version":1,"workerId":"w","owned":{"connectors":[""]},"revoked":{"connectors":[""]}}`,
			"connector 0 has an empty name", "revoked: connector 0 has an empty name"},
		{"unknown error code", `{"version":1,"workerId":"w","error":7}`, "", "unknown error code 7"},
		{"negative delay", `{"version":1,"workerId":"w","delayMs":-5}`, "", "delayMs -5 out of range"},
		{"huge delay", `{"version":1,"workerId":"w","delayMs":9223372036854775807}`, "", "delayMs 9223372036854775807 out of range"},
		{"no worker id", `{"version":1}`, `"workerId" is empty`, ""},
		{"lost worker without id", `{"version":1,"workerId":"w","leaderState":{"lost":[{"held":{}}]}}`, "", "lost worker 0 has an empty workerId"},
		{"bad leader state", `{"version":1,"workerId":"w","leaderState":{"workers":{"a":{"tasks":{"c":[-2]}}}}}`, "", `leaderState: worker "a": task -2 of connector "c"`},
		{"bad deadline", `{"version":1,"workerId":"w","leaderState":{"lost":[{"workerId":"a","deadline":"soon"}]}}`, "", "assignment version 1: parsing time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMetadata([]byte(tc.in))
			check(t, "metadata", err, tc.wantMeta)
			_, err = DecodeAssignment([]byte(tc.in))
			check(t, "assignment", err, tc.wantSync)
		})
	}
}

func check(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %v", what, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want one containing %q", what, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s: error %q does not contain %q", what, err, want)
	}
}

// FuzzDecode: decoding never panics, and whatever decodes re-encodes to
// something that decodes to the same value.
func FuzzDecode(f *testing.F) {
	f.Add(EncodeMetadata(Metadata{WorkerID: "w", URL: "http://w", ConfigOffset: 3, Owned: Assignment{Connectors: []string{"c"}, Tasks: tasksOf("c", 0, 1)}}))
	f.Add(EncodeAssignment(SyncAssignment{LeaderID: "l", Delay: time.Second, Revoked: Assignment{Tasks: tasksOf("c", 2)}}))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeMetadata(b); err == nil {
			enc := EncodeMetadata(m)
			again, err := DecodeMetadata(enc)
			if err != nil || !bytes.Equal(EncodeMetadata(again), enc) {
				t.Errorf("metadata %+v re-decoded as %+v, %v", m, again, err)
			}
		}
		if a, err := DecodeAssignment(b); err == nil {
			enc := EncodeAssignment(a)
			again, err := DecodeAssignment(enc)
			if err != nil || !bytes.Equal(EncodeAssignment(again), enc) {
				t.Errorf("assignment %+v re-decoded as %+v, %v", a, again, err)
			}
		}
	})
}

func TestMetadataToMember(t *testing.T) {
	md := Metadata{Version: Version, WorkerID: "w", URL: "http://w", ConfigOffset: 7, Leaving: true, Owned: Assignment{Connectors: []string{"c"}},
		Revision: "r", Started: t0}
	m := md.Member("m-1")
	if m.MemberID != "m-1" || m.WorkerID != "w" || m.URL != "http://w" || m.ConfigOffset != 7 || !m.Leaving || !m.Owned.Equal(md.Owned) ||
		m.Revision != "r" || !m.Started.Equal(t0) {
		t.Errorf("member %+v from %+v", m, md)
	}
	if got := MaxConfigOffset([]Member{{ConfigOffset: 3}, {ConfigOffset: 9}, {ConfigOffset: -1}}); got != 9 {
		t.Errorf("max config offset %d, want 9", got)
	}
	if got := MaxConfigOffset(nil); got != -1 {
		t.Errorf("max config offset of nobody %d, want -1", got)
	}
}
