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
	"fmt"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Table source modes.
const (
	ModeBulk                  = "bulk"
	ModeIncrementing          = "incrementing"
	ModeTimestamp             = "timestamp"
	ModeTimestampIncrementing = "timestamp+incrementing"
)

// Source partition and offset keys (Kafka's JDBC source uses the same
// offset names).
const (
	PartitionTable      = "table"           // schema.table (database.table for MySQL)
	OffsetIncrementing  = "incrementing"    // last incrementing value sent
	OffsetTimestamp     = "timestamp"       // last timestamp sent, ms since the epoch
	OffsetTimestampNano = "timestamp_nanos" // its nanoseconds within the second
)

// Position is where a table's copy stands: the incrementing value and the
// timestamp of the last record handed out (each only in the modes that
// use it).
type Position struct {
	HasInc bool
	Inc    int64
	HasTs  bool
	Ts     time.Time
}

// Restore sets the position from a stored offset, reading only the parts
// the mode uses.
func (p *Position) Restore(off map[string]any, usesInc, usesTs bool) error {
	if v, ok := off[OffsetIncrementing]; ok && usesInc {
		n, err := plugin.OffsetInt64(v)
		if err != nil {
			return fmt.Errorf("%s: %w", OffsetIncrementing, err)
		}
		p.HasInc, p.Inc = true, n
	}
	if v, ok := off[OffsetTimestamp]; ok && usesTs {
		ms, err := plugin.OffsetInt64(v)
		if err != nil {
			return fmt.Errorf("%s: %w", OffsetTimestamp, err)
		}
		var nanos int64
		if nv, ok := off[OffsetTimestampNano]; ok {
			if nanos, err = plugin.OffsetInt64(nv); err != nil {
				return fmt.Errorf("%s: %w", OffsetTimestampNano, err)
			}
		}
		sec := ms / 1000
		if ms%1000 < 0 {
			sec--
		}
		p.HasTs, p.Ts = true, time.Unix(sec, nanos).UTC()
	}
	return nil
}

// Offset renders the position as a source offset.
func (p Position) Offset() map[string]any {
	m := make(map[string]any, 3)
	if p.HasInc {
		m[OffsetIncrementing] = p.Inc
	}
	if p.HasTs {
		m[OffsetTimestamp] = p.Ts.UnixMilli()
		m[OffsetTimestampNano] = int64(p.Ts.Nanosecond())
	}
	return m
}
