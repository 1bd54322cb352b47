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
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// TEMPORARY: replaced by the shared runtime/connectors/postgres type mapping.

type colType struct {
	oid    uint32
	typmod int32
}

func (c colType) schema() *data.Schema {
	switch c.oid {
	case pgtype.Int2OID:
		return data.OptionalInt16Schema
	case pgtype.Int4OID:
		return data.OptionalInt32Schema
	case pgtype.Int8OID:
		return data.OptionalInt64Schema
	case pgtype.BoolOID:
		return data.OptionalBooleanSchema
	}
	return data.OptionalStringSchema
}

func (c colType) value(text []byte) (any, error) {
	s := string(text)
	switch c.oid {
	case pgtype.Int2OID:
		n, err := strconv.ParseInt(s, 10, 16)
		return int16(n), err
	case pgtype.Int4OID:
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case pgtype.Int8OID:
		return strconv.ParseInt(s, 10, 64)
	case pgtype.BoolOID:
		return s == "t", nil
	}
	return s, nil
}

var _ = fmt.Sprint
