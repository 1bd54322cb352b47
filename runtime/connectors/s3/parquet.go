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

package s3

// format.class=parquet: a record's value schema as a Parquet schema, and
// its value as a Parquet row (the record shredded into its leaf columns
// with repetition and definition levels, as Dremel and the Parquet format
// define them).

import (
	"bytes"
	"cmp"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Parquet codecs (parquet.codec), Confluent's names; lz4 is LZ4_RAW, the
// framing the Parquet format keeps (the older Hadoop LZ4 is deprecated).
const (
	CodecNone   = "none"
	CodecSnappy = "snappy"
	CodecGzip   = "gzip"
	CodecZstd   = "zstd"
	CodecLZ4    = "lz4"
	CodecBrotli = "brotli"
)

// codecs maps parquet.codec to the codec and the object name's extension
// before .parquet (parquet-mr's, as Confluent's sink names its files).
var codecs = map[string]struct {
	codec compress.Codec
	ext   string
}{
	CodecNone:   {&parquet.Uncompressed, ""},
	CodecSnappy: {&parquet.Snappy, ".snappy"},
	CodecGzip:   {&parquet.Gzip, ".gz"},
	CodecZstd:   {&parquet.Zstd, ".zstd"},
	CodecLZ4:    {&parquet.Lz4Raw, ".lz4raw"},
	CodecBrotli: {&parquet.Brotli, ".br"},
}

// DecimalPrecisionParam is the Decimal schema parameter that gives the
// Parquet DECIMAL's precision (Confluent's AvroData name); without it
// the precision is defaultDecimalPrecision, the most that Spark, Hive and
// Arrow's decimal128 read.
const (
	DecimalPrecisionParam   = "connect.decimal.precision"
	defaultDecimalPrecision = 38
)

// pqSchema is a value schema compiled for Parquet: the file schema and
// the tree that shreds values into rows.
type pqSchema struct {
	source  *data.Schema
	schema  *parquet.Schema
	root    *pqNode
	columns int
	sh      *shredder
}

type pqKind int

const (
	pqLeaf pqKind = iota
	pqStruct
	pqList
	pqMap
)

// pqNode is one node of the value schema: its definition level when
// present, for lists and maps the repetition level of their entries, and
// the range of leaf columns below it.
type pqNode struct {
	path       string // for errors: a.b, a[] (elements), a{} (map values)
	kind       pqKind
	optional   bool
	def        int // definition level of a present (non-null) value
	rep        int // lists, maps: the repetition level of entries after the first
	first, end int // leaf columns [first, end)
	leaf       func(v any) (parquet.Value, error)
	fields     []*pqNode // structs, in schema order
	elem, key  *pqNode   // lists: elem; maps: key and elem (the value)
}

// compileParquet builds the Parquet schema of a struct value schema; a
// type Parquet cannot hold is an error naming the field.
func compileParquet(s *data.Schema) (*pqSchema, error) {
	if s.Type != data.TypeStruct {
		return nil, fmt.Errorf("the value schema is %s; format.class=parquet writes struct values (one column per field)", s.Type)
	}
	c := &compiler{}
	node, root, err := c.node("", s, 0, 0, true)
	if err != nil {
		return nil, err
	}
	out := &pqSchema{source: s, schema: parquet.NewSchema(schemaName(s), node), root: root, columns: c.columns}
	out.sh = newShredder(out)
	// The shredder numbers the leaf columns itself: they must be the
	// ones parquet-go numbers, in its order.
	cols := out.schema.Columns()
	if len(cols) != len(c.paths) {
		return nil, fmt.Errorf("parquet schema of %s: %d leaf columns, the shredder has %d", s, len(cols), len(c.paths))
	}
	for i, p := range cols {
		if !slices.Equal(p, c.paths[i]) {
			return nil, fmt.Errorf("parquet schema of %s: column %d is %v, the shredder has %v", s, i, p, c.paths[i])
		}
	}
	return out, nil
}

func schemaName(s *data.Schema) string {
	if s.Name != "" {
		return s.Name
	}
	return "record"
}

type compiler struct {
	columns int
	paths   [][]string // leaf column paths, in column order
	at      []string   // the parquet path being compiled
}

// node compiles s at path, below def definition levels and rep repeated
// groups; root is the record's struct (never optional).
func (c *compiler) node(path string, s *data.Schema, def, rep int, root bool) (parquet.Node, *pqNode, error) {
	n := &pqNode{path: path, optional: s.Optional && !root, first: c.columns}
	if n.optional {
		def++
	}
	n.def = def
	name := path
	if name == "" {
		name = "the value"
	}
	var pn parquet.Node
	switch {
	case s.Type == data.TypeStruct:
		if len(s.Fields) == 0 {
			return nil, nil, fmt.Errorf("%s: a struct without fields has no Parquet form (a group needs a column)", name)
		}
		n.kind = pqStruct
		g := parquet.Group{}
		order := make([]string, len(s.Fields))
		for i, f := range s.Fields {
			c.at = append(c.at, f.Name)
			fn, child, err := c.node(join(path, f.Name), f.Schema, def, rep, false)
			c.at = c.at[:len(c.at)-1]
			if err != nil {
				return nil, nil, err
			}
			g[f.Name], order[i] = fn, f.Name
			n.fields = append(n.fields, child)
		}
		pn = orderedGroup(g, order)
	case s.Type == data.TypeArray:
		if s.Elem == nil {
			return nil, nil, fmt.Errorf("%s: an array schema without an element schema", name)
		}
		n.kind, n.rep = pqList, rep+1
		c.at = append(c.at, "list", "element")
		en, elem, err := c.node(path+"[]", s.Elem, def+1, rep+1, false)
		c.at = c.at[:len(c.at)-2]
		if err != nil {
			return nil, nil, err
		}
		n.elem, pn = elem, parquet.List(en)
	case s.Type == data.TypeMap:
		if s.Key == nil || s.Elem == nil {
			return nil, nil, fmt.Errorf("%s: a map schema without a key or value schema", name)
		}
		if !s.Key.Type.IsPrimitive() {
			return nil, nil, fmt.Errorf("%s: map keys of type %s have no Parquet form; keys must be primitive", name, s.Key.Type)
		}
		n.kind, n.rep = pqMap, rep+1
		key := *s.Key
		key.Optional = false // Parquet map keys are required; a nil key is refused when written
		c.at = append(c.at, "key_value", "key")
		kn, k, err := c.node(path+"{key}", &key, def+1, rep+1, false)
		c.at = c.at[:len(c.at)-1]
		if err != nil {
			return nil, nil, err
		}
		c.at = append(c.at, "value")
		vn, v, err := c.node(path+"{}", s.Elem, def+1, rep+1, false)
		c.at = c.at[:len(c.at)-2]
		if err != nil {
			return nil, nil, err
		}
		n.key, n.elem, pn = k, v, parquet.Map(kn, vn)
	default:
		var err error
		if pn, n.leaf, err = leafOf(name, s); err != nil {
			return nil, nil, err
		}
		n.kind = pqLeaf
		c.paths = append(c.paths, slices.Clone(c.at))
		c.columns++
	}
	n.end = c.columns
	if n.optional {
		pn = parquet.Optional(pn)
	}
	return pn, n, nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// leafOf maps a primitive or logical schema to its Parquet leaf and the
// function that converts its Go values.
func leafOf(name string, s *data.Schema) (parquet.Node, func(any) (parquet.Value, error), error) {
	wrong := func(v any) (parquet.Value, error) {
		return parquet.Value{}, fmt.Errorf("%s: a %T value for a %s schema", name, v, describe(s))
	}
	switch s.Name {
	case data.TimestampName:
		return parquet.Timestamp(parquet.Millisecond), func(v any) (parquet.Value, error) {
			t, ok := v.(time.Time)
			if !ok {
				return wrong(v)
			}
			return parquet.Int64Value(t.UnixMilli()), nil
		}, nil
	case data.DateName:
		return parquet.Date(), func(v any) (parquet.Value, error) {
			t, ok := v.(time.Time)
			if !ok {
				return wrong(v)
			}
			d, err := data.DateToDays(t)
			if err != nil {
				return parquet.Value{}, fmt.Errorf("%s: %w", name, err)
			}
			return parquet.Int32Value(d), nil
		}, nil
	case data.TimeName:
		return parquet.Time(parquet.Millisecond), func(v any) (parquet.Value, error) {
			t, ok := v.(time.Time)
			if !ok {
				return wrong(v)
			}
			ms, err := data.TimeToMillis(t)
			if err != nil {
				return parquet.Value{}, fmt.Errorf("%s: %w", name, err)
			}
			return parquet.Int32Value(ms), nil
		}, nil
	case data.DecimalName:
		return decimalLeaf(name, s, wrong)
	}
	switch s.Type {
	case data.TypeInt8:
		return parquet.Int(8), func(v any) (parquet.Value, error) {
			x, ok := v.(int8)
			if !ok {
				return wrong(v)
			}
			return parquet.Int32Value(int32(x)), nil
		}, nil
	case data.TypeInt16:
		return parquet.Int(16), func(v any) (parquet.Value, error) {
			x, ok := v.(int16)
			if !ok {
				return wrong(v)
			}
			return parquet.Int32Value(int32(x)), nil
		}, nil
	case data.TypeInt32:
		return parquet.Int(32), func(v any) (parquet.Value, error) {
			x, ok := v.(int32)
			if !ok {
				return wrong(v)
			}
			return parquet.Int32Value(x), nil
		}, nil
	case data.TypeInt64:
		return parquet.Int(64), func(v any) (parquet.Value, error) {
			x, ok := v.(int64)
			if !ok {
				return wrong(v)
			}
			return parquet.Int64Value(x), nil
		}, nil
	case data.TypeFloat32:
		return parquet.Leaf(parquet.FloatType), func(v any) (parquet.Value, error) {
			x, ok := v.(float32)
			if !ok {
				return wrong(v)
			}
			return parquet.FloatValue(x), nil
		}, nil
	case data.TypeFloat64:
		return parquet.Leaf(parquet.DoubleType), func(v any) (parquet.Value, error) {
			x, ok := v.(float64)
			if !ok {
				return wrong(v)
			}
			return parquet.DoubleValue(x), nil
		}, nil
	case data.TypeBoolean:
		return parquet.Leaf(parquet.BooleanType), func(v any) (parquet.Value, error) {
			x, ok := v.(bool)
			if !ok {
				return wrong(v)
			}
			return parquet.BooleanValue(x), nil
		}, nil
	case data.TypeString:
		return parquet.String(), func(v any) (parquet.Value, error) {
			x, ok := v.(string)
			if !ok {
				return wrong(v)
			}
			return parquet.ByteArrayValue([]byte(x)), nil
		}, nil
	case data.TypeBytes:
		return parquet.Leaf(parquet.ByteArrayType), func(v any) (parquet.Value, error) {
			x, ok := v.([]byte)
			if !ok {
				return wrong(v)
			}
			return parquet.ByteArrayValue(x), nil
		}, nil
	}
	return nil, nil, fmt.Errorf("%s: schema type %q has no Parquet form", name, s.Type)
}

// decimalLeaf is a BYTE_ARRAY DECIMAL(precision, scale) holding the
// big-endian two's-complement unscaled value, as Kafka Connect's bytes.
func decimalLeaf(name string, s *data.Schema, wrong func(any) (parquet.Value, error)) (parquet.Node, func(any) (parquet.Value, error), error) {
	scale, err := data.DecimalScale(s)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	precision := defaultDecimalPrecision
	if p, ok := s.Parameters[DecimalPrecisionParam]; ok {
		if precision, err = strconv.Atoi(p); err != nil || precision < 1 {
			return nil, nil, fmt.Errorf("%s: decimal parameter %s=%q, want a positive integer", name, DecimalPrecisionParam, p)
		}
	}
	if scale < 0 || int(scale) > precision {
		return nil, nil, fmt.Errorf("%s: decimal scale %d outside 0..precision (%d); Parquet DECIMAL needs 0 <= scale <= precision", name, scale, precision)
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	return parquet.Decimal(int(scale), precision, parquet.ByteArrayType), func(v any) (parquet.Value, error) {
		d, ok := v.(data.Decimal)
		if !ok {
			return wrong(v)
		}
		if d.Scale != scale {
			return parquet.Value{}, fmt.Errorf("%s: decimal %s has scale %d, its schema %d", name, d, d.Scale, scale)
		}
		if d.Unscaled != nil && new(big.Int).Abs(d.Unscaled).Cmp(limit) >= 0 {
			return parquet.Value{}, fmt.Errorf("%s: decimal %s has more than %d digits, the column's precision (set the schema parameter %s)", name, d, precision, DecimalPrecisionParam)
		}
		return parquet.ByteArrayValue(data.DecimalToBytes(d)), nil
	}, nil
}

func describe(s *data.Schema) string {
	if s.IsLogical() {
		return s.Name
	}
	return string(s.Type)
}

// orderedGroup is a Parquet group whose columns follow the record
// schema's field order (parquet.Group sorts them by name).
func orderedGroup(g parquet.Group, order []string) parquet.Node {
	byName := map[string]parquet.Field{}
	for _, f := range g.Fields() {
		byName[f.Name()] = f
	}
	fields := make([]parquet.Field, len(order))
	for i, name := range order {
		fields[i] = byName[name]
	}
	return ordered{Group: g, fields: fields}
}

type ordered struct {
	parquet.Group
	fields []parquet.Field
}

func (g ordered) Fields() []parquet.Field { return g.fields }

// shredder turns values into rows of one pqSchema.
type shredder struct {
	s    *pqSchema
	cols [][]parquet.Value
	keys []any
}

func newShredder(s *pqSchema) *shredder {
	return &shredder{s: s, cols: make([][]parquet.Value, s.columns)}
}

// row appends the row of a value of the schema to dst.
func (sh *shredder) row(dst parquet.Row, v any) (parquet.Row, error) {
	for i := range sh.cols {
		sh.cols[i] = sh.cols[i][:0]
	}
	if err := sh.write(sh.s.root, v, 0, 0); err != nil {
		return dst, err
	}
	for _, col := range sh.cols {
		dst = append(dst, col...)
	}
	return dst, nil
}

// write shreds v at n: rep is the repetition level of its first value,
// def the definition level of its parent.
func (sh *shredder) write(n *pqNode, v any, rep, def int) error {
	if v == nil {
		if !n.optional && n.path != "" {
			return fmt.Errorf("%s: null, but its schema is not optional", n.path)
		}
		if n.path == "" {
			return fmt.Errorf("a null value; format.class=parquet writes struct values")
		}
		sh.nulls(n, rep, def)
		return nil
	}
	switch n.kind {
	case pqLeaf:
		val, err := n.leaf(v)
		if err != nil {
			return err
		}
		sh.cols[n.first] = append(sh.cols[n.first], val.Level(rep, n.def, n.first))
	case pqStruct:
		st, ok := v.(*data.Struct)
		if !ok {
			return fmt.Errorf("%s: a %T value for a struct schema", pathName(n), v)
		}
		if len(st.Schema().Fields) != len(n.fields) {
			return fmt.Errorf("%s: a struct of %d fields for a schema of %d", pathName(n), len(st.Schema().Fields), len(n.fields))
		}
		for i, f := range n.fields {
			if err := sh.write(f, st.GetIndex(i), rep, n.def); err != nil {
				return err
			}
		}
	case pqList:
		elems, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: a %T value for an array schema", pathName(n), v)
		}
		if len(elems) == 0 {
			sh.nulls(n, rep, n.def)
			return nil
		}
		for i, e := range elems {
			if i > 0 {
				rep = n.rep
			}
			if err := sh.write(n.elem, e, rep, n.def+1); err != nil {
				return err
			}
		}
	case pqMap:
		return sh.writeMap(n, v, rep)
	}
	return nil
}

// writeMap writes a map's entries in key order, so that the same records
// always give the same file.
func (sh *shredder) writeMap(n *pqNode, v any, rep int) error {
	var get func(k any) any
	keys := sh.keys[:0]
	switch m := v.(type) {
	case map[any]any:
		for k := range m {
			keys = append(keys, k)
		}
		get = func(k any) any { return m[k] }
	case map[string]any:
		for k := range m {
			keys = append(keys, k)
		}
		get = func(k any) any { return m[k.(string)] }
	default:
		return fmt.Errorf("%s: a %T value for a map schema", pathName(n), v)
	}
	if len(keys) == 0 {
		sh.nulls(n, rep, n.def)
		return nil
	}
	slices.SortFunc(keys, compareKeys)
	// Entries may hold maps themselves: take the keys out of sh.keys.
	sh.keys = nil
	defer func() { sh.keys = keys[:0] }()
	for i, k := range keys {
		if i > 0 {
			rep = n.rep
		}
		if k == nil {
			return fmt.Errorf("%s: a null map key; Parquet map keys are required", pathName(n))
		}
		if err := sh.write(n.key, k, rep, n.def+1); err != nil {
			return err
		}
		if err := sh.write(n.elem, get(k), rep, n.def+1); err != nil {
			return err
		}
	}
	return nil
}

// nulls writes an absent value at n: a null in each of its columns at
// definition level def.
func (sh *shredder) nulls(n *pqNode, rep, def int) {
	for c := n.first; c < n.end; c++ {
		sh.cols[c] = append(sh.cols[c], parquet.Value{}.Level(rep, def, c))
	}
}

func pathName(n *pqNode) string {
	if n.path == "" {
		return "the value"
	}
	return n.path
}

// compareKeys orders map keys of one primitive type; keys of different
// types (which a schema'd map does not hold) by their type's name.
func compareKeys(a, b any) int {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return cmp.Compare(x, y)
		}
	case int8:
		if y, ok := b.(int8); ok {
			return cmp.Compare(x, y)
		}
	case int16:
		if y, ok := b.(int16); ok {
			return cmp.Compare(x, y)
		}
	case int32:
		if y, ok := b.(int32); ok {
			return cmp.Compare(x, y)
		}
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case float32:
		if y, ok := b.(float32); ok {
			return cmp.Compare(x, y)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			return cmp.Compare(boolInt(x), boolInt(y))
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	case data.Decimal:
		if y, ok := b.(data.Decimal); ok && x.Unscaled != nil && y.Unscaled != nil {
			return x.Unscaled.Cmp(y.Unscaled)
		}
	}
	return cmp.Compare(fmt.Sprintf("%T", a), fmt.Sprintf("%T", b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
