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

// Package parquetread reads Parquet files with Apache Arrow's Go reader
// (github.com/apache/arrow-go), an implementation independent of
// parquet-go, which the S3 sink writes with: what it reads back, any
// Parquet reader can.
package parquetread

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// File is what Arrow reads from one Parquet file.
type File struct {
	// Schema is the Arrow schema Arrow derives from the file's Parquet
	// schema (its logical types: date32, timestamp[ms, tz=UTC], ...).
	Schema *arrow.Schema
	// Rows are the rows in file order, each as Arrow renders a row in
	// JSON (array.RecordToJSON).
	Rows []string
	// Codecs are the compression codecs of the file's column chunks,
	// without repeats (for example "SNAPPY").
	Codecs []string
}

// Columns renders the Arrow schema's top-level fields, one per column:
// "name: type" (", nullable" when optional), the types as Arrow writes
// them, for example "ts: timestamp[ms, tz=UTC]".
func (f *File) Columns() []string {
	var out []string
	for _, fd := range f.Schema.Fields() {
		c := fd.Name + ": " + fd.Type.String()
		if fd.Nullable {
			c += ", nullable"
		}
		out = append(out, c)
	}
	return out
}

// Read reads a whole Parquet file.
func Read(ctx context.Context, b []byte) (*File, error) {
	pf, err := file.NewParquetReader(bytes.NewReader(b), file.WithReadProps(parquet.NewReaderProperties(memory.DefaultAllocator)))
	if err != nil {
		return nil, fmt.Errorf("opening the Parquet file: %w", err)
	}
	defer pf.Close()
	out := &File{}
	seen := map[string]bool{}
	md := pf.MetaData()
	for g := 0; g < md.NumRowGroups(); g++ {
		rg := md.RowGroup(g)
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return nil, err
			}
			if name := strings.ToUpper(cc.Compression().String()); !seen[name] {
				seen[name] = true
				out.Codecs = append(out.Codecs, name)
			}
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("reading the Parquet schema: %w", err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the Parquet file: %w", err)
	}
	defer tbl.Release()
	out.Schema = tbl.Schema()
	tr := array.NewTableReader(tbl, 64<<10)
	defer tr.Release()
	var buf bytes.Buffer
	for tr.Next() {
		buf.Reset()
		if err := array.RecordToJSON(tr.RecordBatch(), &buf); err != nil {
			return nil, err
		}
		for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
			if l != "" {
				out.Rows = append(out.Rows, l)
			}
		}
	}
	if err := tr.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
