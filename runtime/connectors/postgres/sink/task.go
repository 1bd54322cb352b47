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

package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Task buffers records and writes them in transactions on its own writer
// goroutine, so that the runtime fetches and converts the next records
// while the database works on the previous ones.
//
// Batching adapts to the load, as a group commit does: the writer never
// idles while records are buffered. When no write is in flight, a Put's
// records are written at once (even a single record); while a write is in
// flight, Puts keep appending, and when it ends the next write takes
// everything buffered, up to batch.size records (more stays for the write
// after). Under load batches grow to batch.size by themselves; under a
// trickle each record is committed within about one transaction's time,
// without waiting for the next offset commit.
//
// The contract (Kafka Connect's SinkTask one, for a sink that writes
// asynchronously):
//   - Put appends to the buffer and returns. It blocks only while the
//     buffer already holds batch.size records, until the writer takes
//     them: memory holds at most the batch in flight, a full buffer and
//     the last Put's records.
//   - At most one write is in flight (a pgx.Conn serves one statement at
//     a time), and writes take records in put order: a batch never
//     commits after a later one, which upserts' last-write-wins relies on.
//   - A write's failure is never lost: the next Put or Flush returns it,
//     and the writer starts nothing until one has. A retriable failure
//     puts its batch back at the head of the buffer, so it is written
//     again before anything newer (the writer resumes once the failure is
//     reported); the Put that returns it leaves its own records out, since
//     the runtime puts them again. A non-retriable failure stops the
//     writer and is returned by every later Put and Flush (the task fails).
//   - Flush returns nil only once every record put so far is committed:
//     the runtime commits offsets after it, so upserts stay exactly-once
//     under redelivery. It writes nothing itself; with nothing buffered
//     and nothing in flight it returns at once. A failed Flush keeps the
//     unwritten records (the runtime may not deliver all of them again);
//     records delivered again are written again, which upserts absorb.
//   - Close holds the writer, waits for the write in flight and only then
//     drops the closed partitions' buffered records. Stop cancels the
//     write in flight and waits for the writer goroutine to end.
//
// The runtime serialises Put, Flush, Close and Stop; they and the writer
// goroutine share the fields under mu. The writer alone uses conn, writers
// and stages, except before it starts and after it ended.
type Task struct {
	s      *settings
	log    *slog.Logger
	errant plugin.ErrantRecordReporter // nil without a dead letter queue or error log

	// writer state: the writer goroutine's own
	conn    *pgx.Conn
	writers map[string]*writer // by topic; valid for the current connection
	stages  int

	ctx    context.Context // the writes' context, cancelled by Stop
	cancel context.CancelFunc
	done   chan struct{} // closed when the writer goroutine ended; nil before Start

	mu   sync.Mutex
	cond *sync.Cond // signalled on every change of the fields below
	// under mu
	buf         []*plugin.SinkRecord // put and not taken by a write, in put order
	spare       []*plugin.SinkRecord // a written batch's emptied slice, reused for buf
	busy        bool                 // a write is in flight
	cancelWrite context.CancelFunc   // cancels the write in flight
	held        bool                 // Close holds the writer: no new write starts
	stopped     bool                 // Stop was called: the writer ends
	failure     error                // a retriable failure not yet returned by Put or Flush
	fatal       error                // a non-retriable failure, returned by every Put and Flush
}

// writer writes the records of one topic into its table.
type writer struct {
	table   pgcommon.Table
	columns map[string]pgcommon.Column
	pk      []string // the table's primary key
	stage   string   // temporary staging table on the current connection
	layouts map[[2]*data.Schema]*layout
	// insertNew's backoff after key conflicts: batches left to skip, and
	// how many the next conflict skips
	copySkip, copyBackoff int
}

// layout says how records of one key/value schema pair become columns.
type layout struct {
	cols    []string // every column written, primary key columns first
	npk     int      // how many of cols form the key
	colsKey string   // cols joined, to group rows
	// plan, when set, fills a row of this layout straight from records
	// whose value (and struct key) have the schemas planned for.
	plan *rowPlan
}

// rowPlan says where each column of a layout comes from, so that records
// of the planned struct schemas skip listing their fields by name.
type rowPlan struct {
	value, key *data.Schema // the planned structs' schemas (key nil: no struct key)
	wholeKey   bool         // a column holds the record key itself
	cols       []planCol
}

type planCol struct {
	src    int // one of the src constants
	idx    int // field index for srcValue and srcKeyField
	schema *data.Schema
}

const (
	srcValue = iota
	srcKeyField
	srcKey
	srcTopic
	srcPartition
	srcOffset
)

// row is one operation on a table.
type row struct {
	del bool
	lay *layout
	// vals are the row's SQL values; nil for a record that lay's plan
	// fills only as COPY streams it (see rowSource), so that PostgreSQL
	// already works on the first rows while the later ones are filled.
	vals []any
	rec  *plugin.SinkRecord // the record the row comes from
	key  string             // encoded primary key values, for deduplication
}

// rowSource streams rows to COPY, filling each row's values by its
// layout's plan when they were left for later (and keeping them, for a
// second COPY of the same rows after a conflict).
type rowSource struct {
	rows []row
	cols int // the leading values streamed (0: all)
	next int
	err  error
}

func (s *rowSource) Next() bool {
	if s.err != nil || s.next >= len(s.rows) {
		return false
	}
	rw := &s.rows[s.next]
	s.next++
	if rw.vals == nil {
		vals, ok, err := rw.lay.plan.fill(rw.rec)
		if err == nil && !ok {
			err = fmt.Errorf("record %s/%d no longer has the shape its row was planned for", rw.rec.TopicPartition(), rw.rec.Offset)
		}
		if err != nil {
			s.err = err
			return false
		}
		rw.vals = vals
	}
	return true
}

func (s *rowSource) Values() ([]any, error) {
	v := s.rows[s.next-1].vals
	if s.cols > 0 {
		v = v[:s.cols]
	}
	return v, nil
}

func (s *rowSource) Err() error { return s.err }

// copyIn copies src's rows into table. It returns the failure that ended
// the stream itself (a record that could not be filled, a value pgx cannot
// encode for its column) as such, and non-retriable: PostgreSQL reports a
// COPY ended by its client as cancelled, which would read as retriable
// and be retried forever.
func copyIn(ctx context.Context, tx pgx.Tx, table pgx.Identifier, cols []string, src *rowSource) (int64, error) {
	n, err := tx.CopyFrom(ctx, table, cols, src)
	if serr := src.Err(); serr != nil {
		return n, serr
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "57014" && strings.HasPrefix(pgErr.Message, "COPY from stdin failed") {
		// pgx stopped at the row it was encoding: the last one handed out.
		at := ""
		if src.next > 0 {
			if r := src.rows[src.next-1].rec; r != nil {
				at = fmt.Sprintf("record %s/%d: ", r.TopicPartition(), r.Offset)
			}
		}
		return n, fatalf("%s%s", at, pgErr.Message)
	}
	return n, err
}

// Start parses the configuration, opens the connection and starts the
// writer goroutine.
func (t *Task) Start(ctx context.Context, tc plugin.SinkTaskContext, config map[string]string) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	t.s, t.log, t.errant = s, tc.Logger(), tc.ErrantRecordReporter()
	t.writers = map[string]*writer{}
	conn, err := connect(ctx, config)
	if err != nil {
		return err
	}
	t.conn = conn
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.cond = sync.NewCond(&t.mu)
	t.done = make(chan struct{})
	go t.run()
	return nil
}

// Open does nothing: tables are found on their first record.
func (t *Task) Open(context.Context, []plugin.TopicPartition) error { return nil }

// Put appends the records to the buffer, for the writer to take as soon
// as no write is in flight. It waits only while the buffer already holds
// batch.size records. It returns a failure of an earlier write instead of
// taking the records (a retriable one: the runtime puts them again).
func (t *Task) Put(ctx context.Context, records []*plugin.SinkRecord) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	full := func() bool { return len(t.buf) >= t.s.batchSize }
	if err := t.waitWhile(ctx, full); err != nil {
		return plugin.Retriable(fmt.Errorf("waiting for the write in flight to make room for %d records (%d buffered): %w", len(records), len(t.buf), err))
	}
	if err := t.takeFailure(); err != nil {
		return err
	}
	t.buf = append(t.buf, records...)
	t.cond.Broadcast()
	return nil
}

// Flush returns once every record put so far is committed: it waits for
// the writer to empty the buffer and finish its write. It returns the
// first failure; unwritten records stay for the writer to try again.
func (t *Task) Flush(ctx context.Context, _ map[plugin.TopicPartition]int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	pending := func() bool { return t.busy || len(t.buf) > 0 }
	if err := t.waitWhile(ctx, pending); err != nil {
		return plugin.Retriable(fmt.Errorf("waiting for %d buffered records and the write in flight: %w", len(t.buf), err))
	}
	return t.takeFailure()
}

// Close drops buffered records of revoked partitions (they were flushed
// unless the flush failed, and another task now owns them). It holds the
// writer and waits for the write in flight first, so that no write of
// this task lands after the next owner's; when ctx ends first it cancels
// that write and still waits for it.
func (t *Task) Close(ctx context.Context, partitions []plugin.TopicPartition) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held = true
	defer func() {
		t.held = false
		t.cond.Broadcast()
	}()
	if t.busy {
		stop := context.AfterFunc(ctx, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.cancelWrite != nil {
				t.cancelWrite()
			}
		})
		defer stop()
		for t.busy {
			t.cond.Wait()
		}
	}
	gone := map[plugin.TopicPartition]bool{}
	for _, tp := range partitions {
		gone[tp] = true
	}
	t.buf = slices.DeleteFunc(t.buf, func(r *plugin.SinkRecord) bool { return gone[r.TopicPartition()] })
	if len(t.buf) == 0 {
		t.failure = nil // nothing left to retry or to report
	}
	return nil
}

// Stop cancels the write in flight, waits for the writer goroutine and
// closes the connection; unflushed records are delivered again.
func (t *Task) Stop() error {
	if t.cancel != nil {
		t.cancel()
	}
	if t.done != nil {
		t.mu.Lock()
		t.stopped = true
		t.cond.Broadcast()
		t.mu.Unlock()
		<-t.done
	}
	if t.conn != nil {
		err := t.conn.Close(context.Background())
		t.conn = nil
		return err
	}
	return nil
}

// run is the writer goroutine: it writes buffered records, batch.size at
// most at a time, whenever there are some and nothing holds it back.
func (t *Task) run() {
	defer close(t.done)
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		for !t.stopped && (len(t.buf) == 0 || t.held || t.failure != nil || t.fatal != nil) {
			t.cond.Wait()
		}
		if t.stopped {
			return
		}
		batch := t.take()
		ctx, cancel := context.WithCancel(t.ctx)
		t.busy, t.cancelWrite = true, cancel
		t.cond.Broadcast() // room in the buffer
		t.mu.Unlock()
		err := t.write(ctx, batch)
		done := 0
		if err != nil && !plugin.IsRetriable(err) && t.errant != nil {
			done, err = t.writeEach(ctx, batch)
		}
		cancel()
		t.mu.Lock()
		t.busy, t.cancelWrite = false, nil
		t.settle(batch, done, err)
		t.cond.Broadcast()
	}
}

// writeEach writes the records of a batch that failed for good one at a
// time, in order, each in its own transaction, and hands those that fail
// for good themselves to the errant record reporter (errors.tolerance, the
// dead letter queue), as Kafka Connect's JDBC sink does: one bad record
// then costs one record, not the task. It returns how many records are
// done (written or reported) and the error that stopped it: a retriable
// one (the rest is written again) or one the reporter did not take.
func (t *Task) writeEach(ctx context.Context, batch []*plugin.SinkRecord) (int, error) {
	for i, r := range batch {
		err := t.write(ctx, batch[i:i+1])
		if err == nil {
			continue
		}
		if plugin.IsRetriable(err) {
			return i, err
		}
		// The reporter logs it when errors.log.enable asks for it.
		if rerr := t.errant.Report(ctx, r, err); rerr != nil {
			return i, rerr
		}
	}
	return len(batch), nil
}

// take removes the next batch from the head of the buffer.
func (t *Task) take() []*plugin.SinkRecord {
	batch := t.buf
	if n := t.s.batchSize; len(batch) > n {
		t.buf = append(t.spare, batch[n:]...)
		batch = batch[:n]
	} else {
		t.buf = t.spare
	}
	t.spare = nil
	return batch
}

// settle takes the result of a write whose first done records are
// written or reported: success frees the batch's slice for reuse, a
// retriable failure puts the rest of the batch back at the head of the
// buffer and a non-retriable one fails the task.
func (t *Task) settle(batch []*plugin.SinkRecord, done int, err error) {
	switch {
	case err == nil:
		clear(batch[:cap(batch)])
		t.spare = batch[:0]
	case plugin.IsRetriable(err):
		t.buf, t.failure = append(batch[done:], t.buf...), err
	default:
		t.fatal = err
	}
}

// waitWhile waits, with mu held, while pending holds and no failure is
// to be reported. It returns ctx's cause when ctx ends first, and an error
// once the task is stopped.
func (t *Task) waitWhile(ctx context.Context, pending func() bool) error {
	blocked := func() bool { return pending() && t.failure == nil && t.fatal == nil && !t.stopped }
	if blocked() {
		stop := context.AfterFunc(ctx, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.cond.Broadcast()
		})
		defer stop()
		for blocked() {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			t.cond.Wait()
		}
	}
	if t.stopped && t.fatal == nil && t.failure == nil {
		return errors.New("the task is stopped")
	}
	return nil
}

// takeFailure returns the failure Put or Flush must report: a
// non-retriable one every time, a retriable one once (the writer then
// resumes).
func (t *Task) takeFailure() error {
	if t.fatal != nil {
		return t.fatal
	}
	err := t.failure
	if err != nil {
		t.failure = nil
		t.cond.Broadcast()
	}
	return err
}

// write writes recs in one transaction.
func (t *Task) write(ctx context.Context, recs []*plugin.SinkRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if t.conn == nil || t.conn.IsClosed() {
		conn, err := connect(ctx, t.s.raw)
		if err != nil {
			return plugin.Retriable(err)
		}
		t.conn, t.writers = conn, map[string]*writer{}
	}
	err := pgx.BeginFunc(ctx, t.conn, func(tx pgx.Tx) error {
		// Topics in order of first appearance; records keep their order.
		var topics []string
		byTopic := map[string][]*plugin.SinkRecord{}
		for _, r := range recs {
			if _, ok := byTopic[r.Topic]; !ok {
				topics = append(topics, r.Topic)
			}
			byTopic[r.Topic] = append(byTopic[r.Topic], r)
		}
		for _, topic := range topics {
			if err := t.writeTopic(ctx, tx, topic, byTopic[topic]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// Staging tables and created tables went with the transaction.
		t.writers = map[string]*writer{}
		return classify(err)
	}
	return nil
}

// connect opens a connection for the writes.
func connect(ctx context.Context, config map[string]string) (*pgx.Conn, error) {
	conn, err := pgcommon.Connect(ctx, config)
	if err != nil {
		return nil, err
	}
	registerNumeric(conn.TypeMap())
	return conn, nil
}

// classify marks errors that a retry may cure (lost connections, conflicts
// between transactions, resource limits) as retriable.
func classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "40", "53", "57", "58":
			return plugin.Retriable(err)
		}
		return err
	}
	var fatal *fatalError
	if errors.As(err, &fatal) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return plugin.Retriable(err)
	}
	// Network errors and the like.
	return plugin.Retriable(err)
}

// fatalError is a problem with the records or the table that retrying
// cannot fix.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

func fatalf(format string, args ...any) error { return &fatalError{fmt.Errorf(format, args...)} }

// writeTopic writes the records of one topic.
func (t *Task) writeTopic(ctx context.Context, tx pgx.Tx, topic string, recs []*plugin.SinkRecord) error {
	w, err := t.writer(ctx, tx, topic, recs)
	if err != nil {
		return err
	}
	rows := make([]row, 0, len(recs))
	for _, r := range recs {
		rw, ok, err := t.row(w, r)
		if err != nil {
			return err
		}
		if ok {
			rows = append(rows, rw)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	upsert := t.s.insertMode == InsertModeUpsert
	if upsert {
		// One operation per key, the last one: a batch's records then
		// commute, and ON CONFLICT never meets a key twice.
		last := make(map[string]int, len(rows))
		for i, rw := range rows {
			last[rw.key] = i
		}
		kept := rows[:0]
		for i, rw := range rows {
			if last[rw.key] == i {
				kept = append(kept, rw)
			}
		}
		rows = kept
	}
	// Runs of rows with the same operation and columns, applied in order.
	// After deduplication (upsert) the order does not matter, so rows are
	// grouped first to make few runs.
	if upsert {
		sort.SliceStable(rows, func(i, j int) bool {
			if rows[i].del != rows[j].del {
				return !rows[i].del
			}
			return rows[i].lay.colsKey < rows[j].lay.colsKey
		})
	}
	staged := false
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && rows[end].del == rows[start].del && rows[end].lay == rows[start].lay {
			end++
		}
		run := rows[start:end]
		start = end
		lay := run[0].lay
		switch {
		case run[0].del:
			if err := t.stageRows(ctx, tx, w, &staged, lay.cols[:lay.npk], &rowSource{rows: run, cols: lay.npk}); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, deleteSQL(w, lay)); err != nil {
				return fmt.Errorf("deleting %d rows from %s: %w", len(run), w.table, err)
			}
		case upsert:
			if done, err := w.insertNew(ctx, tx, lay, &rowSource{rows: run}); done || err != nil {
				if err != nil {
					return fmt.Errorf("inserting %d rows into %s: %w", len(run), w.table, err)
				}
				continue
			}
			if err := t.stageRows(ctx, tx, w, &staged, lay.cols, &rowSource{rows: run}); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, upsertSQL(w, lay)); err != nil {
				return fmt.Errorf("upserting %d rows into %s: %w", len(run), w.table, err)
			}
		default:
			if _, err := copyIn(ctx, tx, identifier(w.table), lay.cols, &rowSource{rows: run}); err != nil {
				return fmt.Errorf("inserting %d rows into %s: %w", len(run), w.table, err)
			}
		}
	}
	return nil
}

// insertNew copies upserted rows straight into the table when none of
// their keys exists yet (a first load, append-mostly topics): COPY inserts
// rows in batches, INSERT ... ON CONFLICT one by one, and costs PostgreSQL
// more than twice the CPU. It runs in a savepoint; when a key exists (a
// unique violation) the savepoint is rolled back, done is false and the
// caller upserts the rows. After such a conflict the next batches skip
// the attempt, 1, 2, 4 ... up to 64 of them while conflicts go on.
// Triggers and constraints apply as for the upsert's inserts (COPY does
// not apply rules).
func (w *writer) insertNew(ctx context.Context, tx pgx.Tx, lay *layout, src *rowSource) (done bool, err error) {
	if w.copySkip > 0 {
		w.copySkip--
		return false, nil
	}
	sp, err := tx.Begin(ctx) // a savepoint
	if err != nil {
		return false, err
	}
	if _, err := copyIn(ctx, sp, identifier(w.table), lay.cols, src); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23505" { // unique_violation
			return false, err
		}
		if err := sp.Rollback(ctx); err != nil {
			return false, err
		}
		w.copyBackoff = min(max(2*w.copyBackoff, 1), 64)
		w.copySkip = w.copyBackoff
		return false, nil
	}
	w.copyBackoff = 0
	return true, sp.Commit(ctx)
}

// stageRows copies rows into the writer's staging table, emptying it first
// when an earlier run of this transaction used it.
func (t *Task) stageRows(ctx context.Context, tx pgx.Tx, w *writer, staged *bool, cols []string, src *rowSource) error {
	if w.stage == "" {
		t.stages++
		name := fmt.Sprintf("conveyor_stage_%d", t.stages)
		// A temporary table without constraints, emptied at every commit.
		if _, err := tx.Exec(ctx, fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DELETE ROWS AS SELECT * FROM %s WITH NO DATA",
			pgcommon.QuoteIdent(name), w.table.Quoted())); err != nil {
			return fmt.Errorf("creating a staging table for %s: %w", w.table, err)
		}
		w.stage = name
	}
	if *staged {
		if _, err := tx.Exec(ctx, "TRUNCATE "+pgcommon.QuoteIdent(w.stage)); err != nil {
			return fmt.Errorf("emptying the staging table of %s: %w", w.table, err)
		}
	}
	*staged = true
	if _, err := copyIn(ctx, tx, pgx.Identifier{w.stage}, cols, src); err != nil {
		return fmt.Errorf("staging %d rows for %s: %w", len(src.rows), w.table, err)
	}
	return nil
}

func identifier(t pgcommon.Table) pgx.Identifier {
	if t.Schema == "" {
		return pgx.Identifier{t.Name}
	}
	return pgx.Identifier{t.Schema, t.Name}
}

func quoteAll(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = pgcommon.QuoteIdent(c)
	}
	return strings.Join(q, ", ")
}

func upsertSQL(w *writer, lay *layout) string {
	cols := quoteAll(lay.cols)
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) SELECT %s FROM %s ON CONFLICT (%s) DO ", w.table.Quoted(), cols, cols, pgcommon.QuoteIdent(w.stage), quoteAll(w.pk))
	var sets []string
	for _, c := range lay.cols {
		if !slices.Contains(w.pk, c) {
			q := pgcommon.QuoteIdent(c)
			sets = append(sets, q+" = EXCLUDED."+q)
		}
	}
	if len(sets) == 0 {
		b.WriteString("NOTHING")
	} else {
		b.WriteString("UPDATE SET " + strings.Join(sets, ", "))
	}
	return b.String()
}

func deleteSQL(w *writer, lay *layout) string {
	conds := make([]string, lay.npk)
	for i, c := range lay.cols[:lay.npk] {
		q := pgcommon.QuoteIdent(c)
		conds[i] = "t." + q + " = s." + q
	}
	return fmt.Sprintf("DELETE FROM %s t USING %s s WHERE %s", w.table.Quoted(), pgcommon.QuoteIdent(w.stage), strings.Join(conds, " AND "))
}

// writer returns the topic's writer, finding (or creating) its table.
func (t *Task) writer(ctx context.Context, tx pgx.Tx, topic string, recs []*plugin.SinkRecord) (*writer, error) {
	if w, ok := t.writers[topic]; ok {
		return w, nil
	}
	tbl, err := t.s.table(topic)
	if err != nil {
		return nil, fatalf("%s for topic %s: %w", KeyTableNameFormat, topic, err)
	}
	rt, err := pgcommon.Resolve(ctx, tx, tbl)
	if errors.Is(err, pgcommon.ErrNoTable) {
		if !t.s.autoCreate {
			return nil, fatalf("table %s for topic %s does not exist: create it, or set auto.create=true", tbl, topic)
		}
		if err := t.create(ctx, tx, tbl, recs); err != nil {
			return nil, err
		}
		rt, err = pgcommon.Resolve(ctx, tx, tbl)
	}
	if err != nil {
		return nil, err
	}
	cols, err := pgcommon.Columns(ctx, tx, rt)
	if err != nil {
		return nil, err
	}
	pk, err := pgcommon.PrimaryKey(ctx, tx, rt)
	if err != nil {
		return nil, err
	}
	if t.s.insertMode == InsertModeUpsert && len(pk) == 0 {
		return nil, fatalf("insert.mode=upsert needs a primary key on table %s: add one (ALTER TABLE %s ADD PRIMARY KEY (...))", rt, rt.Quoted())
	}
	w := &writer{table: rt, columns: map[string]pgcommon.Column{}, pk: pk, layouts: map[[2]*data.Schema]*layout{}}
	for _, c := range cols {
		w.columns[c.Name] = c
	}
	t.writers[topic] = w
	return w, nil
}

// create creates a table from the first record with a value schema.
func (t *Task) create(ctx context.Context, tx pgx.Tx, tbl pgcommon.Table, recs []*plugin.SinkRecord) error {
	var first *plugin.SinkRecord
	for _, r := range recs {
		if r.ValueSchema != nil && r.Value != nil {
			first = r
			break
		}
	}
	if first == nil {
		return fatalf("auto.create of table %s needs records with a value schema (use a converter with schemas, e.g. JsonConverter with schemas.enable=true)", tbl)
	}
	type col struct {
		name string
		s    *data.Schema
	}
	var cols []col
	var pk []string
	add := func(name string, s *data.Schema, isPK bool) {
		for _, c := range cols {
			if c.name == name {
				return
			}
		}
		cols = append(cols, col{name, s})
		if isPK {
			pk = append(pk, name)
		}
	}
	switch t.s.pkMode {
	case PKModeKafka:
		add(TopicColumn, data.StringSchema, true)
		add(PartitionColumn, data.Int32Schema, true)
		add(OffsetColumn, data.Int64Schema, true)
	case PKModeRecordKey:
		ks := first.KeySchema
		if ks == nil {
			return fatalf("auto.create of table %s with pk.mode=record_key needs records with a key schema", tbl)
		}
		if ks.Type == data.TypeStruct {
			for _, f := range ks.Fields {
				if len(t.s.pkFields) == 0 || slices.Contains(t.s.pkFields, f.Name) {
					add(f.Name, f.Schema, true)
				}
			}
		} else {
			add(keyColumn(t.s), ks, true)
		}
	}
	vs := first.ValueSchema
	if vs.Type != data.TypeStruct {
		return fatalf("auto.create of table %s needs struct values, not %s", tbl, vs.Type)
	}
	for _, f := range vs.Fields {
		add(f.Name, f.Schema, t.s.pkMode == PKModeRecordValue && (len(t.s.pkFields) == 0 || slices.Contains(t.s.pkFields, f.Name)))
	}
	defs := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		typ, err := pgcommon.SQLType(c.s)
		if err != nil {
			return fatalf("auto.create of table %s: field %s: %w", tbl, c.name, err)
		}
		def := pgcommon.QuoteIdent(c.name) + " " + typ
		if !c.s.Optional || slices.Contains(pk, c.name) {
			def += " NOT NULL"
		}
		defs = append(defs, def)
	}
	if len(pk) > 0 {
		defs = append(defs, "PRIMARY KEY ("+quoteAll(pk)+")")
	}
	sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s)", tbl.Quoted(), strings.Join(defs, ", "))
	if _, err := tx.Exec(ctx, sql); err != nil {
		return fmt.Errorf("auto.create: %s: %w", sql, err)
	}
	t.log.Info("created table", "table", tbl.String())
	return nil
}

func keyColumn(s *settings) string {
	if len(s.pkFields) > 0 {
		return s.pkFields[0]
	}
	return DefaultKeyColumn
}

// row turns a record into an operation; ok is false for skipped tombstones.
func (t *Task) row(w *writer, r *plugin.SinkRecord) (row, bool, error) {
	if r.Value == nil {
		if !t.s.deleteEnabled {
			return row{}, false, nil
		}
		lay, vals, err := t.keyPart(w, r)
		if err != nil {
			return row{}, false, err
		}
		return row{del: true, lay: lay, vals: vals, rec: r, key: encodeKey(vals)}, true, nil
	}
	if lay := w.layouts[[2]*data.Schema{r.KeySchema, r.ValueSchema}]; lay != nil && lay.plan != nil {
		// A planned record: its key now (for deduplication), the other
		// values as COPY streams it (rowSource).
		if key, ok, err := lay.plan.values(r, lay.npk); ok || err != nil {
			if err != nil {
				return row{}, false, err
			}
			return row{lay: lay, rec: r, key: encodeKey(key)}, true, nil
		}
	}
	lay, vals, err := t.layoutAndValues(w, r)
	if err != nil {
		return row{}, false, err
	}
	return row{lay: lay, vals: vals, rec: r, key: encodeKey(vals[:lay.npk])}, true, nil
}

// fields lists a struct's or a map's field names, values and schemas.
func fields(s *data.Schema, v any, what string, r *plugin.SinkRecord) ([]string, []any, []*data.Schema, error) {
	switch x := v.(type) {
	case *data.Struct:
		sch := x.Schema()
		names := make([]string, len(sch.Fields))
		vals := make([]any, len(sch.Fields))
		schemas := make([]*data.Schema, len(sch.Fields))
		for i, f := range sch.Fields {
			names[i], schemas[i] = f.Name, f.Schema
			vals[i] = x.GetIndex(f.Index)
			if vals[i] == nil {
				vals[i] = f.Schema.Default
			}
		}
		return names, vals, schemas, nil
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		vals := make([]any, len(names))
		for i, k := range names {
			vals[i] = x[k]
		}
		return names, vals, make([]*data.Schema, len(names)), nil
	}
	return nil, nil, nil, fatalf("record %s/%d: the %s is %T; want a struct (with a schema) or a JSON object", r.TopicPartition(), r.Offset, what, v)
}

// keyPart returns the primary key columns and values of a tombstone.
func (t *Task) keyPart(w *writer, r *plugin.SinkRecord) (*layout, []any, error) {
	names, vals, schemas, err := t.keyFields(r)
	if err != nil {
		return nil, nil, err
	}
	lk := [2]*data.Schema{r.KeySchema, nil}
	lay := w.layouts[lk]
	if lay == nil || r.KeySchema == nil {
		lay = &layout{cols: names, npk: len(names), colsKey: "del:" + strings.Join(names, "\x00")}
		if err := w.check(lay.cols, r); err != nil {
			return nil, nil, err
		}
		if r.KeySchema != nil {
			w.layouts[lk] = lay
		}
	}
	for i := range vals {
		v, err := pgcommon.SQLValue(schemas[i], vals[i])
		if err != nil {
			return nil, nil, fatalf("record %s/%d: key field %s: %w", r.TopicPartition(), r.Offset, names[i], err)
		}
		vals[i] = v
	}
	return lay, vals, nil
}

// keyFields returns the key's columns for pk.mode=record_key.
func (t *Task) keyFields(r *plugin.SinkRecord) ([]string, []any, []*data.Schema, error) {
	if r.Key == nil {
		return nil, nil, nil, fatalf("record %s/%d has no key, but pk.mode=record_key", r.TopicPartition(), r.Offset)
	}
	switch r.Key.(type) {
	case *data.Struct, map[string]any:
		names, vals, schemas, err := fields(r.KeySchema, r.Key, "key", r)
		if err != nil || len(t.s.pkFields) == 0 {
			return names, vals, schemas, err
		}
		var n []string
		var v []any
		var s []*data.Schema
		for _, want := range t.s.pkFields {
			i := slices.Index(names, want)
			if i < 0 {
				return nil, nil, nil, fatalf("record %s/%d: the key has no field %q named in pk.fields", r.TopicPartition(), r.Offset, want)
			}
			n, v, s = append(n, names[i]), append(v, vals[i]), append(s, schemas[i])
		}
		return n, v, s, nil
	}
	return []string{keyColumn(t.s)}, []any{r.Key}, []*data.Schema{r.KeySchema}, nil
}

// layoutAndValues returns the columns and values of a record (primary key
// columns first).
func (t *Task) layoutAndValues(w *writer, r *plugin.SinkRecord) (*layout, []any, error) {
	if lay := w.layouts[[2]*data.Schema{r.KeySchema, r.ValueSchema}]; lay != nil && lay.plan != nil {
		if out, ok, err := lay.plan.fill(r); ok || err != nil {
			return lay, out, err
		}
	}
	names, vals, schemas, err := fields(r.ValueSchema, r.Value, "value", r)
	if err != nil {
		return nil, nil, err
	}
	var pkNames []string
	var pkVals []any
	var pkSchemas []*data.Schema
	switch t.s.pkMode {
	case PKModeKafka:
		pkNames = []string{TopicColumn, PartitionColumn, OffsetColumn}
		pkVals = []any{r.Topic, r.Partition, r.Offset}
		pkSchemas = make([]*data.Schema, 3)
	case PKModeRecordKey:
		if pkNames, pkVals, pkSchemas, err = t.keyFields(r); err != nil {
			return nil, nil, err
		}
	case PKModeRecordValue:
		want := t.s.pkFields
		if len(want) == 0 {
			want = names
		}
		for _, n := range want {
			i := slices.Index(names, n)
			if i < 0 {
				return nil, nil, fatalf("record %s/%d: the value has no field %q named in pk.fields", r.TopicPartition(), r.Offset, n)
			}
			pkNames, pkVals, pkSchemas = append(pkNames, n), append(pkVals, vals[i]), append(pkSchemas, schemas[i])
		}
	}
	// Value fields that are not key columns.
	out := make([]any, 0, len(pkVals)+len(vals))
	out = append(out, pkVals...)
	var rest []int
	for i, n := range names {
		if !slices.Contains(pkNames, n) {
			rest = append(rest, i)
		}
	}
	for _, i := range rest {
		out = append(out, vals[i])
	}
	allSchemas := append(append([]*data.Schema{}, pkSchemas...), make([]*data.Schema, 0, len(rest))...)
	for _, i := range rest {
		allSchemas = append(allSchemas, schemas[i])
	}
	for i := range out {
		v, err := pgcommon.SQLValue(allSchemas[i], out[i])
		if err != nil {
			return nil, nil, fatalf("record %s/%d: %w", r.TopicPartition(), r.Offset, err)
		}
		out[i] = v
	}
	lk := [2]*data.Schema{r.KeySchema, r.ValueSchema}
	cacheable := r.ValueSchema != nil && (t.s.pkMode != PKModeRecordKey || r.KeySchema != nil)
	if lay := w.layouts[lk]; cacheable && lay != nil {
		return lay, out, nil
	}
	cols := append(append([]string{}, pkNames...), make([]string, 0, len(rest))...)
	for _, i := range rest {
		cols = append(cols, names[i])
	}
	lay := &layout{cols: cols, npk: len(pkNames), colsKey: strings.Join(cols, "\x00")}
	if err := w.check(cols, r); err != nil {
		return nil, nil, err
	}
	if cacheable {
		lay.plan = t.planRow(r, lay, allSchemas)
		w.layouts[lk] = lay
	} else {
		// Schemaless records: one layout per distinct column set.
		if prev := w.layouts[[2]*data.Schema{}]; prev != nil && prev.colsKey == lay.colsKey {
			return prev, out, nil
		}
		w.layouts[[2]*data.Schema{}] = lay
	}
	return lay, out, nil
}

// planRow plans where each column of lay comes from for records like r
// (struct values, struct or primitive keys); nil when it cannot.
func (t *Task) planRow(r *plugin.SinkRecord, lay *layout, schemas []*data.Schema) *rowPlan {
	v, ok := r.Value.(*data.Struct)
	if !ok {
		return nil
	}
	p := &rowPlan{value: v.Schema(), cols: make([]planCol, len(lay.cols))}
	field := func(s *data.Schema, name string) int {
		if f := s.Field(name); f != nil {
			return f.Index
		}
		return -1
	}
	for i, name := range lay.cols {
		c := planCol{src: srcValue, schema: schemas[i]}
		if i < lay.npk {
			switch t.s.pkMode {
			case PKModeKafka:
				c.src = srcTopic + i
			case PKModeRecordKey:
				switch k := r.Key.(type) {
				case *data.Struct:
					p.key, c.src, c.idx = k.Schema(), srcKeyField, field(k.Schema(), name)
				case map[string]any, nil:
					return nil
				default:
					p.wholeKey, c.src = true, srcKey
				}
			}
		}
		if c.src == srcValue {
			c.idx = field(p.value, name)
		}
		if (c.src == srcValue || c.src == srcKeyField) && c.idx < 0 {
			return nil
		}
		p.cols[i] = c
	}
	return p
}

// fill returns the SQL values of a record by the plan; ok is false when
// the record does not have the planned shape (the general path then
// handles it).
func (p *rowPlan) fill(r *plugin.SinkRecord) ([]any, bool, error) {
	return p.values(r, len(p.cols))
}

// values returns the SQL values of the first n columns of a record by the
// plan, or ok false (see fill).
func (p *rowPlan) values(r *plugin.SinkRecord, n int) ([]any, bool, error) {
	v, ok := r.Value.(*data.Struct)
	if !ok || v.Schema() != p.value {
		return nil, false, nil
	}
	var k *data.Struct
	if p.key != nil {
		if k, ok = r.Key.(*data.Struct); !ok || k.Schema() != p.key {
			return nil, false, nil
		}
	}
	if p.wholeKey {
		switch r.Key.(type) {
		case *data.Struct, map[string]any, nil:
			return nil, false, nil
		}
	}
	out := make([]any, n)
	for i, c := range p.cols[:n] {
		var x any
		switch c.src {
		case srcValue:
			if x = v.GetIndex(c.idx); x == nil {
				x = c.schema.Default
			}
		case srcKeyField:
			if x = k.GetIndex(c.idx); x == nil {
				x = c.schema.Default
			}
		case srcKey:
			x = r.Key
		case srcTopic:
			x = r.Topic
		case srcPartition:
			x = r.Partition
		case srcOffset:
			x = r.Offset
		}
		sv, err := pgcommon.SQLValue(c.schema, x)
		if err != nil {
			return nil, false, fatalf("record %s/%d: %w", r.TopicPartition(), r.Offset, err)
		}
		out[i] = sv
	}
	return out, true, nil
}

// check verifies that the table has every column and, for upserts, that
// the record's key columns are the table's primary key.
func (w *writer) check(cols []string, r *plugin.SinkRecord) error {
	for _, c := range cols {
		if _, ok := w.columns[c]; !ok {
			return fatalf("record %s/%d has field %q but table %s has no such column: add it (ALTER TABLE %s ADD COLUMN %s ...)",
				r.TopicPartition(), r.Offset, c, w.table, w.table.Quoted(), pgcommon.QuoteIdent(c))
		}
	}
	return nil
}

// encodeKey renders primary key values as one string for deduplication.
func encodeKey(vals []any) string {
	var b []byte
	for i, v := range vals {
		if i > 0 {
			b = append(b, 0)
		}
		switch x := v.(type) {
		case string:
			b = append(b, x...)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case int32:
			b = strconv.AppendInt(b, int64(x), 10)
		case int16:
			b = strconv.AppendInt(b, int64(x), 10)
		case []byte:
			b = append(b, x...)
		default:
			b = fmt.Append(b, x)
		}
	}
	return string(b)
}
