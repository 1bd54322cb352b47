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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/store"
)

// Version is the version of the member metadata and assignment encodings that
// this package writes and the only one it reads. The group layer should also
// name it in the JoinGroup protocol (ProtocolName), so that the coordinator
// only groups workers that speak it.
const Version = 1

// maxDelayMs is the longest delay a time.Duration holds, in milliseconds.
const maxDelayMs = int64(math.MaxInt64 / time.Millisecond)

// ProtocolName is the JoinGroup protocol name for Version.
const ProtocolName = "conveyor-v1"

// Assignment error codes carried by SyncAssignment.Error.
const (
	// ErrorNone: the assignment is good to apply.
	ErrorNone int16 = 0
	// ErrorConfigMismatch: the member must read the config topic up to
	// SyncAssignment.ConfigOffset and rejoin before it runs anything.
	ErrorConfigMismatch int16 = 1
)

// Metadata is what a member sends in JoinGroup.
type Metadata struct {
	Version      int
	WorkerID     string
	URL          string
	ConfigOffset int64
	Owned        Assignment
	// Leaving: see Member.Leaving.
	Leaving bool
	// Departed names the workers that left on purpose in the last round
	// this member was sent (State.Left): the leader passes them on as
	// Input.Departed.
	Departed []string
	// Revision and Started: see Member.
	Revision string
	Started  time.Time
}

// Member returns the Member the leader sees for metadata m of memberID.
func (m Metadata) Member(memberID string) Member {
	return Member{MemberID: memberID, WorkerID: m.WorkerID, URL: m.URL, ConfigOffset: m.ConfigOffset, Owned: m.Owned, Leaving: m.Leaving,
		Revision: m.Revision, Started: m.Started}
}

// SyncAssignment is what the leader sends each member in SyncGroup.
type SyncAssignment struct {
	Version int
	// Error is ErrorNone or ErrorConfigMismatch.
	Error        int16
	LeaderID     string
	LeaderURL    string
	ConfigOffset int64
	Assigned     Assignment
	Revoked      Assignment
	// Delay, when positive, says held work of a lost worker waits: rejoin
	// after Delay. Carried in milliseconds.
	Delay time.Duration
	// LeaderState, when set, is the leader's Result.State. A member keeps
	// the last one it received; if it becomes leader with no state of its
	// own, it passes it as Input.Previous, so that the old leader's work and
	// the lost workers' work stay held (and keep their deadlines) across a
	// leader change. Deadlines are absolute times: clock skew between
	// workers shifts them by the skew.
	LeaderState *State
	// HeldOffUntil, when set, says the crash-loop guard holds this worker
	// off until then (MemberAssignment.HeldOffUntil).
	HeldOffUntil time.Time
}

// wireAssignment is Assignment on the wire: tasks grouped by connector, so a
// thousand tasks do not repeat their connector names.
type wireAssignment struct {
	Connectors []string         `json:"connectors,omitempty"`
	Tasks      map[string][]int `json:"tasks,omitempty"`
}

type wireMetadata struct {
	Version      int            `json:"version"`
	WorkerID     string         `json:"workerId"`
	URL          string         `json:"url,omitempty"`
	ConfigOffset int64          `json:"configOffset"`
	Owned        wireAssignment `json:"owned"`
	Leaving      bool           `json:"leaving,omitempty"`
	Departed     []string       `json:"departed,omitempty"`
	Revision     string         `json:"revision,omitempty"`
	Started      *time.Time     `json:"started,omitempty"`
}

type wireSync struct {
	Version      int            `json:"version"`
	Error        int16          `json:"error,omitempty"`
	LeaderID     string         `json:"leaderId,omitempty"`
	LeaderURL    string         `json:"leaderUrl,omitempty"`
	ConfigOffset int64          `json:"configOffset"`
	Assigned     wireAssignment `json:"assigned"`
	Revoked      wireAssignment `json:"revoked"`
	DelayMs      int64          `json:"delayMs,omitempty"`
	LeaderState  *wireState     `json:"leaderState,omitempty"`
	HeldOffUntil *time.Time     `json:"heldOffUntil,omitempty"`
}

type wireState struct {
	Workers map[string]wireAssignment `json:"workers,omitempty"`
	Lost    []wireLost                `json:"lost,omitempty"`
	// Unstable is State.Unstable, as it is.
	Unstable []UnstableWorker `json:"unstable,omitempty"`
	// Left is State.Left, as it is.
	Left []string `json:"left,omitempty"`
}

type wireLost struct {
	WorkerID string         `json:"workerId"`
	Held     wireAssignment `json:"held"`
	Deadline time.Time      `json:"deadline"`
}

func stateToWire(st *State) *wireState {
	if st == nil {
		return nil
	}
	w := &wireState{}
	for id, a := range st.Workers {
		if w.Workers == nil {
			w.Workers = map[string]wireAssignment{}
		}
		w.Workers[id] = toWire(a)
	}
	for _, lw := range st.Lost {
		w.Lost = append(w.Lost, wireLost{WorkerID: lw.WorkerID, Held: toWire(lw.Held), Deadline: lw.Deadline})
	}
	w.Unstable = st.Unstable
	w.Left = st.Left
	return w
}

func stateFromWire(w *wireState) (*State, error) {
	if w == nil {
		return nil, nil
	}
	st := &State{}
	for _, id := range slices.Sorted(maps.Keys(w.Workers)) {
		a, err := fromWire(w.Workers[id], fmt.Sprintf("decoding assignment: leaderState: worker %q", id))
		if err != nil {
			return nil, err
		}
		if st.Workers == nil {
			st.Workers = map[string]Assignment{}
		}
		st.Workers[id] = a
	}
	for i, lw := range w.Lost {
		if lw.WorkerID == "" {
			return nil, fmt.Errorf("decoding assignment: leaderState: lost worker %d has an empty workerId", i)
		}
		held, err := fromWire(lw.Held, fmt.Sprintf("decoding assignment: leaderState: lost worker %q: held", lw.WorkerID))
		if err != nil {
			return nil, err
		}
		st.Lost = append(st.Lost, LostWorker{WorkerID: lw.WorkerID, Held: held, Deadline: lw.Deadline.UTC()})
	}
	for i, u := range w.Unstable {
		if u.WorkerID == "" {
			return nil, fmt.Errorf("decoding assignment: leaderState: unstable worker %d has an empty workerId", i)
		}
		r := make([]time.Time, len(u.Releases))
		for j, at := range u.Releases {
			r[j] = at.UTC()
		}
		st.Unstable = append(st.Unstable, UnstableWorker{WorkerID: u.WorkerID, Releases: r})
	}
	st.Left = w.Left
	return st, nil
}

func toWire(a Assignment) wireAssignment {
	a = a.Sorted()
	w := wireAssignment{Connectors: a.Connectors}
	for _, t := range a.Tasks {
		if w.Tasks == nil {
			w.Tasks = map[string][]int{}
		}
		w.Tasks[t.Connector] = append(w.Tasks[t.Connector], t.Task)
	}
	return w
}

func fromWire(w wireAssignment, what string) (Assignment, error) {
	a := Assignment{Connectors: w.Connectors}
	for i, c := range w.Connectors {
		if c == "" {
			return Assignment{}, fmt.Errorf("%s: connector %d has an empty name", what, i)
		}
	}
	for _, c := range slices.Sorted(maps.Keys(w.Tasks)) {
		if c == "" {
			return Assignment{}, fmt.Errorf("%s: tasks listed under an empty connector name", what)
		}
		for _, t := range w.Tasks[c] {
			if t < 0 {
				return Assignment{}, fmt.Errorf("%s: task %d of connector %q: a task index is never negative", what, t, c)
			}
			a.Tasks = append(a.Tasks, store.TaskID{Connector: c, Task: t})
		}
	}
	return a.Sorted(), nil
}

// decodeVersioned checks that b is a JSON object of a version this package
// reads, then decodes it into v.
func decodeVersioned(b []byte, what string, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return fmt.Errorf("decoding %s: empty", what)
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("decoding %s: not a JSON object (%.40q...): %w", what, b, err)
	}
	switch {
	case head.Version == nil:
		return fmt.Errorf("decoding %s: no \"version\" field", what)
	case *head.Version < 1:
		return fmt.Errorf("decoding %s: version %d is not a valid version (versions start at 1)", what, *head.Version)
	case *head.Version > Version:
		return fmt.Errorf("decoding %s: version %d is newer than this worker reads (%d): run the same Conveyor version on every worker of the cluster", what, *head.Version, Version)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding %s version %d: %w", what, *head.Version, err)
	}
	return nil
}

// EncodeMetadata encodes member metadata, always as the current Version.
func EncodeMetadata(m Metadata) []byte {
	w := wireMetadata{
		Version:      Version,
		WorkerID:     m.WorkerID,
		URL:          m.URL,
		ConfigOffset: m.ConfigOffset,
		Owned:        toWire(m.Owned),
		Leaving:      m.Leaving,
		Departed:     m.Departed,
		Revision:     m.Revision,
	}
	if !m.Started.IsZero() {
		at := m.Started.UTC()
		w.Started = &at
	}
	b, err := json.Marshal(w)
	if err != nil {
		panic(fmt.Sprintf("assignor: encoding member metadata: %v", err)) // plain data: cannot fail
	}
	return b
}

// DecodeMetadata decodes member metadata written by EncodeMetadata.
func DecodeMetadata(b []byte) (Metadata, error) {
	var w wireMetadata
	if err := decodeVersioned(b, "member metadata", &w); err != nil {
		return Metadata{}, err
	}
	if w.WorkerID == "" {
		return Metadata{}, errors.New("decoding member metadata: \"workerId\" is empty: every worker advertises its id (host:port)")
	}
	owned, err := fromWire(w.Owned, "decoding member metadata of worker "+w.WorkerID+": owned")
	if err != nil {
		return Metadata{}, err
	}
	md := Metadata{Version: w.Version, WorkerID: w.WorkerID, URL: w.URL, ConfigOffset: w.ConfigOffset, Owned: owned, Leaving: w.Leaving, Departed: w.Departed, Revision: w.Revision}
	if w.Started != nil {
		md.Started = w.Started.UTC()
	}
	return md, nil
}

// EncodeAssignment encodes a member's assignment, always as the current
// Version. The delay is carried in whole milliseconds, rounded up.
func EncodeAssignment(a SyncAssignment) []byte {
	w := wireSync{
		Version:      Version,
		Error:        a.Error,
		LeaderID:     a.LeaderID,
		LeaderURL:    a.LeaderURL,
		ConfigOffset: a.ConfigOffset,
		Assigned:     toWire(a.Assigned),
		Revoked:      toWire(a.Revoked),
		LeaderState:  stateToWire(a.LeaderState),
	}
	if a.Delay > 0 {
		w.DelayMs = int64((a.Delay + time.Millisecond - 1) / time.Millisecond)
	}
	if !a.HeldOffUntil.IsZero() {
		u := a.HeldOffUntil
		w.HeldOffUntil = &u
	}
	b, err := json.Marshal(w)
	if err != nil {
		panic(fmt.Sprintf("assignor: encoding assignment: %v", err)) // plain data: cannot fail
	}
	return b
}

// DecodeAssignment decodes a member's assignment written by EncodeAssignment.
func DecodeAssignment(b []byte) (SyncAssignment, error) {
	var w wireSync
	if err := decodeVersioned(b, "assignment", &w); err != nil {
		return SyncAssignment{}, err
	}
	if w.Error != ErrorNone && w.Error != ErrorConfigMismatch {
		return SyncAssignment{}, fmt.Errorf("decoding assignment: unknown error code %d (known: 0 none, 1 config mismatch)", w.Error)
	}
	if w.DelayMs < 0 || w.DelayMs > maxDelayMs {
		return SyncAssignment{}, fmt.Errorf("decoding assignment: delayMs %d out of range (0 to %d)", w.DelayMs, maxDelayMs)
	}
	assigned, err := fromWire(w.Assigned, "decoding assignment: assigned")
	if err != nil {
		return SyncAssignment{}, err
	}
	revoked, err := fromWire(w.Revoked, "decoding assignment: revoked")
	if err != nil {
		return SyncAssignment{}, err
	}
	leaderState, err := stateFromWire(w.LeaderState)
	if err != nil {
		return SyncAssignment{}, err
	}
	var heldOff time.Time
	if w.HeldOffUntil != nil {
		heldOff = w.HeldOffUntil.UTC()
	}
	return SyncAssignment{
		HeldOffUntil: heldOff,
		Version:      w.Version,
		Error:        w.Error,
		LeaderID:     w.LeaderID,
		LeaderURL:    w.LeaderURL,
		ConfigOffset: w.ConfigOffset,
		Assigned:     assigned,
		Revoked:      revoked,
		Delay:        time.Duration(w.DelayMs) * time.Millisecond,
		LeaderState:  leaderState,
	}, nil
}
