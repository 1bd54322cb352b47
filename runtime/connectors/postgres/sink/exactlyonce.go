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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/pgcommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Exactly-once writes (exactly.once=true): see jdbc's KeyExactlyOnce.
const (
	KeyExactlyOnce        = jdbc.KeyExactlyOnce
	KeyExactlyOnceOffsets = jdbc.KeyExactlyOnceOffsets
	DefaultOffsetsTable   = jdbc.DefaultOffsetsTable
)

func exactlyOnceFields() []plugin.ConfigField { return jdbc.ExactlyOnceFields(group) }

// offsetsDDL creates the offsets table.
func offsetsDDL(tbl pgcommon.Table) string {
	return `CREATE TABLE IF NOT EXISTS ` + tbl.Quoted() + ` (connector text NOT NULL, topic text NOT NULL, kafka_partition integer NOT NULL,
		next_offset bigint NOT NULL, PRIMARY KEY (connector, topic, kafka_partition))`
}

// ensureOffsetsTable creates the offsets table when it is missing.
func ensureOffsetsTable(ctx context.Context, conn *pgx.Conn, tbl pgcommon.Table) error {
	if _, err := conn.Exec(ctx, offsetsDDL(tbl)); err != nil {
		if lostCreateRace(err) {
			return nil
		}
		return fmt.Errorf("creating the exactly-once offsets table %s (%s): %w", tbl, KeyExactlyOnceOffsets, err)
	}
	return nil
}

// lostCreateRace reports whether err is what CREATE TABLE IF NOT EXISTS
// answers to the loser of two sessions creating one table at once: both
// found it missing, the other committed first, and this one sees a unique
// violation on the catalog (23505), a duplicate table (42P07) or the
// table's row type already there (42710, duplicate_object). The table
// exists all the same.
func lostCreateRace(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P07" || pgErr.Code == "42710")
}

// storedOffsets reads the stored next offsets of a connector's partitions
// (those without a row are missing from the map).
func storedOffsets(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, tbl pgcommon.Table, connector string) (map[plugin.TopicPartition]int64, error) {
	rows, err := q.Query(ctx, `SELECT topic, kafka_partition, next_offset FROM `+tbl.Quoted()+` WHERE connector = $1 AND next_offset >= 0`, connector)
	if err != nil {
		return nil, fmt.Errorf("reading the stored offsets of connector %s from %s: %w", connector, tbl, err)
	}
	defer rows.Close()
	return jdbc.ScanOffsets(rows)
}

// openExactlyOnce seeks newly assigned partitions to their stored
// offsets (on the task's own offsets connection; the writer owns the
// other).
func (t *Task) openExactlyOnce(ctx context.Context, partitions []plugin.TopicPartition) error {
	if t.offConn == nil || t.offConn.IsClosed() {
		conn, err := connect(ctx, t.s.raw)
		if err != nil {
			return plugin.Retriable(err)
		}
		t.offConn = conn
	}
	stored, err := storedOffsets(ctx, t.offConn, t.s.offsetsTable, t.s.connector)
	if err != nil {
		return err
	}
	if n := jdbc.Seek(t.tc, partitions, stored); n > 0 {
		t.log.Info("resuming from the offsets stored in the database", "partitions", n, "table", t.s.offsetsTable.String())
	}
	return nil
}

// claim locks the offset rows of the batch's partitions in tx, drops the
// records below each partition's stored offset and returns the rest,
// with the offsets to store after them.
func (t *Task) claim(ctx context.Context, tx pgx.Tx, recs []*plugin.SinkRecord) ([]*plugin.SinkRecord, map[plugin.TopicPartition]int64, error) {
	next, tps := jdbc.BatchOffsets(recs)
	topics := make([]string, len(tps))
	parts := make([]int32, len(tps))
	for i, tp := range tps {
		topics[i], parts[i] = tp.Topic, tp.Partition
	}
	tbl := t.s.offsetsTable.Quoted()
	// The no-op update locks an existing row (in a fixed order, so two
	// tasks never deadlock) and returns its offset; a new row starts at -1.
	rows, err := tx.Query(ctx, `INSERT INTO `+tbl+` AS o (connector, topic, kafka_partition, next_offset)
		SELECT $1, t, p, -1 FROM unnest($2::text[], $3::integer[]) AS u(t, p)
		ON CONFLICT (connector, topic, kafka_partition) DO UPDATE SET next_offset = o.next_offset
		RETURNING topic, kafka_partition, next_offset`, t.s.connector, topics, parts)
	if err != nil {
		return nil, nil, fmt.Errorf("locking the stored offsets in %s: %w", t.s.offsetsTable, err)
	}
	stored := map[plugin.TopicPartition]int64{}
	for rows.Next() {
		var tp plugin.TopicPartition
		var o int64
		if err := rows.Scan(&tp.Topic, &tp.Partition, &o); err != nil {
			rows.Close()
			return nil, nil, err
		}
		stored[tp] = o
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("locking the stored offsets in %s: %w", t.s.offsetsTable, err)
	}
	keep := jdbc.Claim(recs, next, stored)
	if dropped := len(recs) - len(keep); dropped > 0 {
		t.log.Debug("dropped records the database already holds", "records", dropped)
	}
	return keep, next, nil
}

// storeOffsets writes the batch's offsets in tx.
func (t *Task) storeOffsets(ctx context.Context, tx pgx.Tx, next map[plugin.TopicPartition]int64) error {
	topics := make([]string, 0, len(next))
	parts := make([]int32, 0, len(next))
	offs := make([]int64, 0, len(next))
	for tp, o := range next {
		topics, parts, offs = append(topics, tp.Topic), append(parts, tp.Partition), append(offs, o)
	}
	_, err := tx.Exec(ctx, `UPDATE `+t.s.offsetsTable.Quoted()+` AS o SET next_offset = u.n
		FROM unnest($2::text[], $3::integer[], $4::bigint[]) AS u(t, p, n)
		WHERE o.connector = $1 AND o.topic = u.t AND o.kafka_partition = u.p`, t.s.connector, topics, parts, offs)
	if err != nil {
		return fmt.Errorf("storing the batch's offsets in %s: %w", t.s.offsetsTable, err)
	}
	return nil
}

// AlterSinkOffsets makes the stored offsets follow an operator's PATCH
// (or DELETE) of /connectors/{c}/offsets: a partition given an offset
// resumes there, one given null (or all, on reset) loses its row and
// resumes from the consumer group's offset. Without exactly.once it does
// nothing.
func (c *Connector) AlterSinkOffsets(ctx context.Context, config map[string]string, offsets map[plugin.TopicPartition]*int64, all bool) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	if !s.exactlyOnce {
		return nil
	}
	conn, err := connect(ctx, config)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := ensureOffsetsTable(ctx, conn, s.offsetsTable); err != nil {
		return err
	}
	tbl := s.offsetsTable.Quoted()
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if all {
			_, err := tx.Exec(ctx, `DELETE FROM `+tbl+` WHERE connector = $1`, s.connector)
			return err
		}
		for tp, o := range offsets {
			var err error
			if o == nil {
				_, err = tx.Exec(ctx, `DELETE FROM `+tbl+` WHERE connector = $1 AND topic = $2 AND kafka_partition = $3`, s.connector, tp.Topic, tp.Partition)
			} else {
				_, err = tx.Exec(ctx, `INSERT INTO `+tbl+` (connector, topic, kafka_partition, next_offset) VALUES ($1, $2, $3, $4)
					ON CONFLICT (connector, topic, kafka_partition) DO UPDATE SET next_offset = EXCLUDED.next_offset`, s.connector, tp.Topic, tp.Partition, *o)
			}
			if err != nil {
				return fmt.Errorf("altering the stored offset of %s in %s: %w", tp, s.offsetsTable, err)
			}
		}
		return nil
	})
}

var _ plugin.SinkOffsetAlterer = (*Connector)(nil)
