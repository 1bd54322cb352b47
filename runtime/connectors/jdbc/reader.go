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

package jdbc

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// maxPollWait bounds how long one Poll blocks when no table is due.
const maxPollWait = time.Second

// Stream is an open ordered query over one table, read across polls.
type Stream interface {
	// Next advances to the next row; false at the end or on a failure.
	Next() bool
	// Err is the failure that ended Next, nil at a clean end.
	Err() error
	// Record decodes the current row. The record's value is a struct
	// whose incrementing and timestamp fields (the table's IncIdx and
	// TsIdx) are an integer and a time.Time, never nil.
	Record() (*plugin.SourceRecord, error)
	// Close ends the query without reading its remaining rows.
	Close()
}

// SourceTable is one table of a source task: where its copy stands and
// how to continue it.
type SourceTable struct {
	// Name is the table as messages and logs show it (schema.table).
	Name string
	// Partition is the table's source partition, {"table": Name}.
	Partition map[string]any
	// Pos is the position of the last record handed out.
	Pos Position
	// IncIdx and TsIdx are the value fields of the mode's columns (-1
	// when the mode does not use them).
	IncIdx, TsIdx int
	// Columns names the mode's columns for the query.
	Columns QueryColumns
	// SelectSQL is the SELECT list and FROM of the table's query.
	SelectSQL string
	// Open starts the query sql with its arguments (built by Query).
	Open func(ctx context.Context, sql string, args []any) (Stream, error)

	nextDue time.Time
}

// Reader streams a task's tables into records, table after table (each
// when its poll interval elapsed, round-robin), one ordered query at a
// time, giving each record the offset that resumes after it.
type Reader struct {
	Dialect      Dialect
	Mode         string
	BatchMaxRows int
	PollInterval time.Duration
	Delay        time.Duration // timestamp.delay.interval.ms
	Log          *slog.Logger
	Tables       []*SourceTable
	Now          func() time.Time

	next int // round-robin position
	cur  *cursor
}

// cursor is the open stream of one table.
type cursor struct {
	st     *SourceTable
	stream Stream
	// timestamp mode only: the last record read, held back until the next
	// row shows whether its timestamp group is complete.
	pending   *plugin.SourceRecord
	pendingTs time.Time
	// the offset of everything before the pending record's group
	groupBase map[string]any
}

// Resume sets the tables' positions from their stored offsets.
func (r *Reader) Resume(ctx context.Context, offsets plugin.OffsetReader) error {
	parts := make([]map[string]any, len(r.Tables))
	for i, st := range r.Tables {
		parts[i] = st.Partition
	}
	offs, err := offsets.Offsets(ctx, parts)
	if err != nil {
		return fmt.Errorf("table source task: reading stored offsets: %w", err)
	}
	for i, off := range offs {
		if off == nil || i >= len(r.Tables) {
			continue
		}
		st := r.Tables[i]
		if err := st.Pos.Restore(off, st.IncIdx >= 0, st.TsIdx >= 0); err != nil {
			return fmt.Errorf("table source task: stored offset of table %s: %w", st.Name, err)
		}
		r.Log.Info("resuming table", "table", st.Name, "offset", off)
	}
	return nil
}

// UsesIncrementing reports whether a mode tracks an incrementing column.
func UsesIncrementing(mode string) bool {
	return mode == ModeIncrementing || mode == ModeTimestampIncrementing
}

// UsesTimestamp reports whether a mode tracks a timestamp column.
func UsesTimestamp(mode string) bool {
	return mode == ModeTimestamp || mode == ModeTimestampIncrementing
}

// Poll returns up to BatchMaxRows records of the table being streamed,
// opening the next due table's query when none is open. When no table is
// due it waits for the next one (at most a second); a query that finds
// nothing new ends the poll with no records.
func (r *Reader) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	waited := false
	for {
		if r.cur == nil {
			st, wait := r.due()
			if st == nil {
				if waited {
					return nil, nil
				}
				waited = true
				timer := time.NewTimer(min(wait, maxPollWait))
				select {
				case <-ctx.Done():
					timer.Stop()
					return nil, nil
				case <-timer.C:
				}
				continue
			}
			sql, args := Query(r.Dialect, r.Mode, st.SelectSQL, st.Columns, st.Pos, r.Delay.Seconds())
			stream, err := st.Open(ctx, sql, args)
			if err != nil {
				st.nextDue = r.Now().Add(min(r.PollInterval, time.Second))
				return nil, plugin.Retriable(fmt.Errorf("querying table %s: %w", st.Name, err))
			}
			r.cur = &cursor{st: st, stream: stream}
		}
		return r.read()
	}
}

// due returns the next table whose poll interval elapsed (round-robin), or
// how long until one is due.
func (r *Reader) due() (*SourceTable, time.Duration) {
	if len(r.Tables) == 0 {
		return nil, maxPollWait
	}
	now := r.Now()
	wait := time.Duration(math.MaxInt64)
	for i := range r.Tables {
		st := r.Tables[(r.next+i)%len(r.Tables)]
		if !now.Before(st.nextDue) {
			r.next = (r.next + i + 1) % len(r.Tables)
			return st, 0
		}
		wait = min(wait, st.nextDue.Sub(now))
	}
	return nil, wait
}

// read returns up to BatchMaxRows records from the open stream, closing
// it at its end.
//
// In the incrementing modes the last record of the batch carries the
// position after it; the records before it share one offset, the position
// before the batch (one map per batch instead of one per row). Storing the
// offset of any record therefore never skips a row, and a restart re-sends
// at most the rows of the batch whose last record was not yet stored.
//
// In timestamp mode a record is handed out only with its whole group of
// equal timestamps, each carrying the position before the group, so that
// a restart never skips the rest of a group.
func (r *Reader) read() ([]*plugin.SourceRecord, error) {
	cs := r.cur
	st := cs.st
	out := make([]*plugin.SourceRecord, 0, min(r.BatchMaxRows, 4096))
	tsMode := r.Mode == ModeTimestamp
	var base map[string]any
	if r.Mode != ModeBulk && !tsMode {
		base = st.Pos.Offset()
		defer func() {
			if len(out) > 0 {
				out[len(out)-1].SourceOffset = st.Pos.Offset()
			}
		}()
	}
	for len(out) < r.BatchMaxRows {
		if !cs.stream.Next() {
			err := cs.stream.Err()
			r.Close()
			if err != nil {
				// The rows read so far are good; the table is read again
				// from the last record handed out.
				st.nextDue = r.Now().Add(min(r.PollInterval, time.Second))
				if len(out) > 0 {
					r.Log.Warn("reading table failed; continuing later from the last row sent", "table", st.Name, "error", err)
					return out, nil
				}
				return nil, plugin.Retriable(fmt.Errorf("reading table %s: %w", st.Name, err))
			}
			if tsMode && cs.pending != nil {
				st.Pos.HasTs, st.Pos.Ts = true, cs.pendingTs
				cs.pending.SourceOffset = Position{HasTs: true, Ts: cs.pendingTs}.Offset()
				out = append(out, cs.pending)
			}
			st.nextDue = r.Now().Add(r.PollInterval)
			return out, nil
		}
		rec, err := cs.stream.Record()
		if err == nil {
			err = r.checkModeColumns(st, rec)
		}
		if err != nil {
			r.Close()
			return out, fmt.Errorf("table %s: %w", st.Name, err)
		}
		switch {
		case r.Mode == ModeBulk:
		case tsMode:
			ts := rec.Value.(*data.Struct).GetIndex(st.TsIdx).(time.Time)
			if p := cs.pending; p != nil {
				if !ts.Equal(cs.pendingTs) { // the pending record ends its group
					st.Pos.HasTs, st.Pos.Ts = true, cs.pendingTs
					cs.groupBase = Position{HasTs: true, Ts: cs.pendingTs}.Offset()
				}
				p.SourceOffset = cs.groupBase
				out = append(out, p)
			}
			cs.pending, cs.pendingTs = rec, ts
			continue
		default:
			v := rec.Value.(*data.Struct)
			if st.IncIdx >= 0 {
				n, err := plugin.OffsetInt64(v.GetIndex(st.IncIdx))
				if err != nil {
					r.Close()
					return out, fmt.Errorf("table %s: incrementing column %s: %w", st.Name, st.Columns.Inc, err)
				}
				st.Pos.HasInc, st.Pos.Inc = true, n
			}
			if st.TsIdx >= 0 {
				st.Pos.HasTs, st.Pos.Ts = true, v.GetIndex(st.TsIdx).(time.Time)
			}
			rec.SourceOffset = base
		}
		out = append(out, rec)
	}
	return out, nil
}

// checkModeColumns refuses a row with NULL in a mode column: NULLs sort
// last and cannot be a position, so the copy stops before them.
func (r *Reader) checkModeColumns(st *SourceTable, rec *plugin.SourceRecord) error {
	if st.IncIdx < 0 && st.TsIdx < 0 {
		return nil
	}
	v, _ := rec.Value.(*data.Struct)
	if v == nil || (st.IncIdx >= 0 && v.GetIndex(st.IncIdx) == nil) || (st.TsIdx >= 0 && v.GetIndex(st.TsIdx) == nil) {
		var names []string
		if st.TsIdx >= 0 {
			names = append(names, st.Columns.Ts)
		}
		if st.IncIdx >= 0 {
			names = append(names, st.Columns.Inc)
		}
		return fmt.Errorf("a row has NULL in its %s column; make the column NOT NULL or fill it", strings.Join(names, "/"))
	}
	return nil
}

// Close ends the open query, if any, without reading its remaining rows.
func (r *Reader) Close() {
	if r.cur == nil {
		return
	}
	r.cur.stream.Close()
	r.cur = nil
}
