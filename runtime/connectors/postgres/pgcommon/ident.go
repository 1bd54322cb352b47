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

package pgcommon

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/conveyor-dev/conveyor/runtime/connectors/jdbc"
)

// Table names a table, optionally schema-qualified.
type Table struct {
	Schema string // empty: resolved through the search_path
	Name   string
}

// String renders schema.name (or name) without quotes, for logs, offsets
// and messages.
func (t Table) String() string {
	if t.Schema == "" {
		return t.Name
	}
	return t.Schema + "." + t.Name
}

// Quoted renders the table as a quoted SQL identifier.
func (t Table) Quoted() string {
	if t.Schema == "" {
		return pgx.Identifier{t.Name}.Sanitize()
	}
	return pgx.Identifier{t.Schema, t.Name}.Sanitize()
}

// QuoteIdent quotes one SQL identifier (a column name).
func QuoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

// ParseTable parses "table", "schema.table" or their double-quoted forms
// ("My Schema"."Orders", with "" for a quote inside). Unquoted parts keep
// their case: names are taken as written, not folded to lower case, so
// that a topic name maps to the same table name.
func ParseTable(s string) (Table, error) {
	parts, err := jdbc.SplitQualified(s, '"')
	if err != nil {
		return Table{}, err
	}
	switch len(parts) {
	case 1:
		return Table{Name: parts[0]}, nil
	case 2:
		return Table{Schema: parts[0], Name: parts[1]}, nil
	}
	return Table{}, fmt.Errorf("table name %q has %d dot-separated parts; want table or schema.table (quote names that contain dots)", s, len(parts))
}
