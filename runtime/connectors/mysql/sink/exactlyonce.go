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
	"database/sql"
	"fmt"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Exactly-once writes (exactly.once=true), as the PostgreSQL sink's: see
// jdbc.KeyExactlyOnce. The offsets table is InnoDB, its rows locked with
// SELECT ... FOR UPDATE in a fixed order inside the batch's transaction.

// ensureOffsetsTable creates the offsets table when it is missing.
func ensureOffsetsTable(ctx context.Context, db *sql.DB, tbl mycommon.Table) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+tbl.Quoted()+` (connector VARCHAR(255) NOT NULL, topic VARCHAR(255) NOT NULL,
		kafka_partition INT NOT NULL, next_offset BIGINT NOT NULL, PRIMARY KEY (connector, topic, kafka_partition)) ENGINE=InnoDB`)
	if err != nil {
		return fmt.Errorf("creating the exactly-once offsets table %s (%s): %w", tbl, jdbc.KeyExactlyOnceOffsets, err)
	}
	return nil
}

// storedOffsets reads the stored next offsets of a connector's partitions.
func storedOffsets(ctx context.Context, q mycommon.Querier, tbl mycommon.Table, connector, lock string) (map[plugin.TopicPartition]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT topic, kafka_partition, next_offset FROM `+tbl.Quoted()+` WHERE connector = ? AND next_offset >= 0 ORDER BY topic, kafka_partition`+lock, connector)
	if err != nil {
		return nil, fmt.Errorf("reading the stored offsets of connector %s from %s: %w", connector, tbl, err)
	}
	defer rows.Close()
	return jdbc.ScanOffsets(rows)
}

// Open seeks newly assigned partitions to their stored offsets with
// exactly.once; otherwise it does nothing.
func (t *Task) Open(ctx context.Context, partitions []plugin.TopicPartition) error {
	if !t.s.exactlyOnce {
		return nil
	}
	stored, err := storedOffsets(ctx, t.db, t.s.offsetsTable, t.s.connector, "")
	if err != nil {
		return plugin.Retriable(err)
	}
	if n := jdbc.Seek(t.tc, partitions, stored); n > 0 {
		t.log.Info("resuming from the offsets stored in the database", "partitions", n, "table", t.s.offsetsTable.String())
	}
	return nil
}

// claim locks the offset rows of the batch's partitions in tx (creating
// missing ones), and returns the records not yet written with the offsets
// to store after them.
func (t *Task) claim(ctx context.Context, tx *sql.Tx, recs []*plugin.SinkRecord) (map[*plugin.SinkRecord]bool, map[plugin.TopicPartition]int64, error) {
	next, tps := jdbc.BatchOffsets(recs)
	tbl := t.s.offsetsTable.Quoted()
	var b strings.Builder
	args := make([]any, 0, 3*len(tps))
	b.WriteString("INSERT IGNORE INTO " + tbl + " (connector, topic, kafka_partition, next_offset) VALUES ")
	for i, tp := range tps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, -1)")
		args = append(args, t.s.connector, tp.Topic, tp.Partition)
	}
	if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
		return nil, nil, classify(fmt.Errorf("creating the offset rows in %s: %w", t.s.offsetsTable, err))
	}
	all, err := storedOffsets(ctx, tx, t.s.offsetsTable, t.s.connector, " FOR UPDATE")
	if err != nil {
		return nil, nil, classify(err)
	}
	stored := map[plugin.TopicPartition]int64{}
	for _, tp := range tps {
		if o, ok := all[tp]; ok {
			stored[tp] = o
		}
	}
	keep := jdbc.Claim(recs, next, stored)
	if dropped := len(recs) - len(keep); dropped > 0 {
		t.log.Debug("dropped records the database already holds", "records", dropped)
	}
	set := make(map[*plugin.SinkRecord]bool, len(keep))
	for _, r := range keep {
		set[r] = true
	}
	return set, next, nil
}

// storeOffsets writes the batch's offsets in tx.
func (t *Task) storeOffsets(ctx context.Context, tx *sql.Tx, next map[plugin.TopicPartition]int64) error {
	for tp, o := range next {
		if _, err := tx.ExecContext(ctx, `UPDATE `+t.s.offsetsTable.Quoted()+` SET next_offset = ? WHERE connector = ? AND topic = ? AND kafka_partition = ?`,
			o, t.s.connector, tp.Topic, tp.Partition); err != nil {
			return classify(fmt.Errorf("storing the batch's offsets in %s: %w", t.s.offsetsTable, err))
		}
	}
	return nil
}

// Connector is the sink's connector: its tasks share the topics'
// partitions; it also follows an operator's changes of the offsets stored
// with exactly.once (AlterSinkOffsets).
type Connector struct{ plugin.PartitionSinkConnector }

var _ plugin.SinkOffsetAlterer = (*Connector)(nil)

// AlterSinkOffsets makes the stored offsets follow a PATCH (or DELETE) of
// /connectors/{c}/offsets: a partition given an offset resumes there, one
// given null (or all, on reset) loses its row. Without exactly.once it
// does nothing.
func (c *Connector) AlterSinkOffsets(ctx context.Context, config map[string]string, offsets map[plugin.TopicPartition]*int64, all bool) error {
	s, err := parse(config)
	if err != nil || !s.exactlyOnce {
		return err
	}
	db, err := mycommon.Open(ctx, config, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := ensureOffsetsTable(ctx, db, s.offsetsTable); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	tbl := s.offsetsTable.Quoted()
	if all {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+tbl+` WHERE connector = ?`, s.connector); err != nil {
			return err
		}
		return tx.Commit()
	}
	for tp, o := range offsets {
		var err error
		if o == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM `+tbl+` WHERE connector = ? AND topic = ? AND kafka_partition = ?`, s.connector, tp.Topic, tp.Partition)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO `+tbl+` (connector, topic, kafka_partition, next_offset) VALUES (?, ?, ?, ?)
				ON DUPLICATE KEY UPDATE next_offset = VALUES(next_offset)`, s.connector, tp.Topic, tp.Partition, *o)
		}
		if err != nil {
			return fmt.Errorf("altering the stored offset of %s in %s: %w", tp, s.offsetsTable, err)
		}
	}
	return tx.Commit()
}
