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
	"bytes"
	"testing"

	"github.com/conveyor-dev/conveyor/runtime/connectors/mysql/mycommon"
)

// go-mysql decodes unsigned integers as signed, ENUM as the label's
// number, SET as a bit mask and BIT as an integer; binlogText turns them
// into the text form the snapshot reads, so both decode alike.
func TestBinlogText(t *testing.T) {
	col := func(dataType, columnType string, precision int) mycommon.Mapped {
		m, err := mycommon.MapColumn(mycommon.Column{Name: "c", DataType: dataType, ColumnType: columnType, Precision: precision})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	labels := []string{"Red", "Green", "Blue"}
	for _, tc := range []struct {
		m      mycommon.Mapped
		labels []string
		in     any
		want   string
	}{
		{col("tinyint", "tinyint(3) unsigned", 3), nil, int8(-1), "255"},
		{col("smallint", "smallint(5) unsigned", 5), nil, int16(-2), "65534"},
		{col("mediumint", "mediumint(8) unsigned", 8), nil, int32(-1), "16777215"},
		{col("int", "int(10) unsigned", 10), nil, int32(-1), "4294967295"},
		{col("bigint", "bigint(20) unsigned", 20), nil, int64(-1), "18446744073709551615"},
		{col("int", "int(11)", 10), nil, int32(-7), "-7"},
		{col("float", "float", 12), nil, float32(1.5), "1.5"},
		{col("enum", "enum('red','green','blue')", 0), labels, int64(2), "Green"},
		{col("enum", "enum('red','green','blue')", 0), labels, int64(0), ""},
		{col("set", "set('red','green','blue')", 0), labels, int64(5), "Red,Blue"},
		{col("bit", "bit(12)", 12), nil, int64(0xABC), "\x0a\xbc"},
		{col("varchar", "varchar(10)", 0), nil, "x", "x"},
		{col("blob", "blob", 0), nil, []byte{0, 1}, "\x00\x01"},
	} {
		got, err := binlogText(tc.m, tc.labels, tc.in)
		if err != nil {
			t.Errorf("%s %v: %v", tc.m.ColumnType, tc.in, err)
			continue
		}
		if !bytes.Equal(got, []byte(tc.want)) {
			t.Errorf("%s %v: %q, want %q", tc.m.ColumnType, tc.in, got, tc.want)
		}
	}
}

func TestEnumLabelsQuoting(t *testing.T) {
	// enumLabels parses the server's COLUMN_TYPE; its parser is the part
	// that can go wrong without a server.
	got := parseLabels("enum('a','it''s','c,d')")
	want := []string{"a", "it's", "c,d"}
	if len(got) != len(want) {
		t.Fatalf("%q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%q, want %q", got, want)
		}
	}
}
