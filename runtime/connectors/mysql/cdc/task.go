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
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

var discardLogger = slog.New(slog.DiscardHandler)

// Task reads the binlog. Its work happens in Poll: the first call
// connects and starts the snapshot or the stream; a failure that may pass
// is returned as retriable and the next Poll starts again after the last
// record handed out.
type Task struct {
	s         settings
	log       *slog.Logger
	partition map[string]any

	stored  *position // from the offset store at Start
	polled  position  // of the last record handed out
	hasPoll bool

	db     *sql.DB
	srv    server
	tables []mycommon.Table
	snap   *snapshot
	stream *streamer
}

// Start reads the stored position; connecting waits for the first Poll.
func (t *Task) Start(ctx context.Context, tc plugin.SourceTaskContext, config map[string]string) error {
	s, err := parseSettings(config)
	if err != nil {
		return err
	}
	cfg, err := mycommon.Config(config)
	if err != nil {
		return err
	}
	t.s, t.log = s, tc.Logger()
	t.partition = map[string]any{PartitionServer: cfg.Addr}
	off, err := tc.OffsetReader().Offset(ctx, t.partition)
	if err != nil {
		return fmt.Errorf("mysql cdc: reading the stored position: %w", err)
	}
	if off != nil {
		p, err := parsePosition(off)
		if err != nil {
			return fmt.Errorf("mysql cdc: %w", err)
		}
		t.stored = &p
		t.log.Info("resuming from the stored position", "gtids", p.gtids, "gtid", p.gtid, "file", p.file, "pos", p.pos, "row", p.row, "snapshot_unfinished", p.snapshot)
	}
	return nil
}

func (t *Task) fail(err error) error {
	t.teardown()
	err = jdbc.RedactError(err, mycommon.Secrets(t.s.config))
	if errors.Is(err, ErrBinlogPurged) {
		return fmt.Errorf("mysql cdc: %w", err)
	}
	if mycommon.Retriable(err) {
		return plugin.Retriable(fmt.Errorf("mysql cdc: %w", err))
	}
	return fmt.Errorf("mysql cdc: %w", err)
}

// Poll returns the next snapshot rows or streamed changes.
func (t *Task) Poll(ctx context.Context) ([]*plugin.SourceRecord, error) {
	if t.snap == nil && t.stream == nil {
		if err := t.setup(ctx); err != nil {
			return nil, t.fail(err)
		}
	}
	if t.snap != nil {
		recs, done, err := t.snap.next(ctx, t.s.batchSize)
		if err != nil {
			return nil, t.fail(fmt.Errorf("snapshot: %w", err))
		}
		t.handedOut(recs)
		if done {
			at := t.snap.at
			at.snapshot = false
			t.log.Info("snapshot finished", "rows", t.snap.n, "file", at.file, "pos", at.pos, "gtids", at.gtids)
			t.snap.close(ctx)
			t.snap = nil
			if !t.hasPoll { // an empty snapshot: stream from its position
				t.polled, t.hasPoll = at, true
			}
			if err := t.startStream(); err != nil {
				t.teardown()
				return recs, nil // the next Poll sets up again, after these records
			}
		}
		return recs, nil
	}
	recs, err := t.stream.next(ctx, t.s.batchSize, t.s.pollInterval)
	t.handedOut(recs)
	if err != nil {
		if len(recs) > 0 {
			t.teardown() // hand these out; the next Poll sets up again after them
			return recs, nil
		}
		return nil, t.fail(err)
	}
	return recs, nil
}

func (t *Task) handedOut(recs []*plugin.SourceRecord) {
	if len(recs) == 0 {
		return
	}
	if p, err := parsePosition(recs[len(recs)-1].SourceOffset); err == nil {
		t.polled, t.hasPoll = p, true
	}
}

// setup connects, reads the server's flavor and the captured tables, and
// starts the snapshot or the stream.
func (t *Task) setup(ctx context.Context) error {
	db, err := mycommon.Open(ctx, t.s.config, 2)
	if err != nil {
		return err
	}
	t.db = db
	if t.srv, err = inspect(ctx, db); err != nil {
		return err
	}
	if t.tables, err = capturedTables(ctx, db, t.s); err != nil {
		return err
	}
	resume, ok := t.resume()
	if ok && !resume.snapshot {
		return t.startStream()
	}
	if t.s.snapshot == SnapshotInitial {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		tables := make([]*table, 0, len(t.tables))
		for _, id := range t.tables {
			tb, err := loadTable(ctx, t.s, db, id)
			if err != nil {
				_ = conn.Close()
				return err
			}
			tables = append(tables, tb)
		}
		sn, err := beginSnapshot(ctx, t.s, conn, t.srv, tables, t.partition)
		if err != nil {
			_ = conn.Close()
			return err
		}
		t.log.Info("taking the snapshot", "tables", len(tables), "file", sn.at.file, "pos", sn.at.pos, "gtids", sn.at.gtids, "server", t.srv.version)
		t.snap = sn
		t.hasPoll = false
		return nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	p, err := t.srv.currentPosition(ctx, conn)
	_ = conn.Close()
	if err != nil {
		return err
	}
	t.polled, t.hasPoll = p, true
	return t.startStream()
}

// resume is the position up to which records were handed out (this run)
// or stored (a previous run).
func (t *Task) resume() (position, bool) {
	if t.hasPoll {
		return t.polled, true
	}
	if t.stored != nil {
		return *t.stored, true
	}
	return position{}, false
}

func (t *Task) startStream() error {
	p, _ := t.resume()
	st, err := startStream(t.s, t.srv, t.db, t.tables, p, t.partition)
	if err != nil {
		return err
	}
	t.log.Info("streaming the binlog", "from", st.where(), "skip_rows", p.row)
	t.stream = st
	return nil
}

func (t *Task) teardown() {
	if t.stream != nil {
		t.stream.close()
		t.stream = nil
	}
	if t.snap != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.snap.close(ctx)
		cancel()
		t.snap = nil
	}
	if t.db != nil {
		_ = t.db.Close()
		t.db = nil
	}
}

// Stop closes the binlog reader and the connections.
func (t *Task) Stop() error {
	t.teardown()
	return nil
}

func splitHostPort(addr string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %q: %w", mycommon.KeyConnectionURL, addr, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("%s: port %q: %w", mycommon.KeyConnectionURL, port, err)
	}
	return host, uint16(n), nil
}

// CommitRecord has nothing to do: the server keeps its binlog whatever a
// replica read (its retention is binlog_expire_logs_seconds).
func (t *Task) CommitRecord(*plugin.SourceRecord, *plugin.RecordMetadata) error { return nil }

// Commit has nothing to do: the stored offset is the whole position.
func (t *Task) Commit(context.Context) error { return nil }
