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
	"math"
	"math/big"
	"math/rand"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// TestNumericFastPathMatchesGeneral encodes numerics with pgx's binary
// encoder and checks that the decoder of a numeric(p,s) column (whose
// fast path decodes the wire format itself) gives what the general path
// (pgx's scan, then NumericToDecimal) gives, errors included.
func TestNumericFastPathMatchesGeneral(t *testing.T) {
	tm := pgtype.NewMap()
	rng := rand.New(rand.NewSource(1))
	bigs := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(-1), big.NewInt(9999), big.NewInt(10000), big.NewInt(-10001),
		big.NewInt(math.MaxInt64), big.NewInt(math.MinInt64 + 1), new(big.Int).Add(big.NewInt(math.MaxInt64), big.NewInt(1)),
		new(big.Int).Neg(new(big.Int).Add(big.NewInt(math.MaxInt64), big.NewInt(1))),
		new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil)}
	for range 3000 {
		v := new(big.Int).Rand(rng, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rng.Intn(25))), nil))
		if rng.Intn(2) == 0 {
			v.Neg(v)
		}
		bigs = append(bigs, v)
	}
	fast := 0
	for _, scale := range []int32{0, 2, 4, 7, 18, 20} {
		m := Mapped{Column: Column{Name: "n", TypeName: "numeric"}, Kind: KindDecimal, Scale: scale}
		dec := NewDecoder(tm, m, pgtype.NumericOID, pgx.BinaryFormatCode)
		for i, u := range bigs {
			for _, exp := range []int32{-25, -20, -9, -4, -3, -2, -1, 0, 1, 3, 4, 5, 12} {
				n := pgtype.Numeric{Int: u, Exp: exp, Valid: true}
				raw, err := tm.Encode(pgtype.NumericOID, pgx.BinaryFormatCode, n, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, wantErr := NumericToDecimal(n, scale)
				got, err := dec(raw)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("scale %d, %s e%d: error %v, want %v", scale, u, exp, err, wantErr)
				}
				if err == nil && !data.ValuesEqual(got, want) {
					t.Fatalf("scale %d, %s e%d: got %v, want %v", scale, u, exp, got, want)
				}
				if _, ok := numericBinaryToInt64(raw, scale); ok {
					fast++
				}
				if i > 200 && exp != -2 { // the random ones: one exponent is enough
					break
				}
			}
		}
	}
	if fast < 5000 {
		t.Fatalf("only %d values took the fast path; the test no longer covers it", fast)
	}
	for _, special := range []pgtype.Numeric{{NaN: true, Valid: true}, {InfinityModifier: pgtype.Infinity, Valid: true}, {InfinityModifier: pgtype.NegativeInfinity, Valid: true}} {
		raw, err := tm.Encode(pgtype.NumericOID, pgx.BinaryFormatCode, special, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := Mapped{Column: Column{Name: "n"}, Kind: KindDecimal, Scale: 2}
		if v, err := NewDecoder(tm, m, pgtype.NumericOID, pgx.BinaryFormatCode)(raw); err == nil {
			t.Fatalf("%+v decoded as %v, want an error", special, v)
		}
	}
}

// Decoded decimals share a slab's memory; arithmetic on one must leave the
// others alone.
func TestDecimalSlabIntsAreIndependent(t *testing.T) {
	var s decimalSlab
	a, b := s.int(5), s.int(-7)
	a.Mul(a, new(big.Int).Exp(big.NewInt(10), big.NewInt(40), nil))
	if b.Int64() != -7 {
		t.Fatalf("b = %s after growing a, want -7", b)
	}
	if z := s.int(0); z.Sign() != 0 {
		t.Fatalf("zero = %s", z)
	}
}

// TestBinaryDecodersMatchGeneric encodes values of the fixed-size types
// with pgx's binary encoder and checks that the direct decoders give what
// pgx's scan plans give, errors (infinite timestamps and dates) included.
func TestBinaryDecodersMatchGeneric(t *testing.T) {
	tm := pgtype.NewMap()
	rng := rand.New(rand.NewSource(3))
	type kase struct {
		kind Kind
		oid  uint32
		vals func() any
	}
	instant := func() time.Time {
		return time.Unix(rng.Int63n(8_000_000_000)-3_000_000_000, rng.Int63n(1_000_000)*1000).UTC()
	}
	cases := []kase{
		{KindInt16, pgtype.Int2OID, func() any { return int16(rng.Intn(65536) - 32768) }},
		{KindInt32, pgtype.Int4OID, func() any { return int32(rng.Uint32()) }},
		{KindInt64, pgtype.Int8OID, func() any { return int64(rng.Uint64()) }},
		{KindFloat32, pgtype.Float4OID, func() any { return float32(rng.NormFloat64() * 1e6) }},
		{KindFloat64, pgtype.Float8OID, func() any { return rng.NormFloat64() * 1e12 }},
		{KindBool, pgtype.BoolOID, func() any { return rng.Intn(2) == 0 }},
		{KindTimestamptz, pgtype.TimestamptzOID, func() any {
			if rng.Intn(50) == 0 {
				return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
			}
			return instant()
		}},
		{KindTimestamp, pgtype.TimestampOID, func() any {
			if rng.Intn(50) == 0 {
				return pgtype.Timestamp{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
			}
			return pgtype.Timestamp{Time: instant(), Valid: true}
		}},
		{KindDate, pgtype.DateOID, func() any {
			if rng.Intn(50) == 0 {
				return pgtype.Date{InfinityModifier: pgtype.Infinity, Valid: true}
			}
			return time.Date(1+rng.Intn(4000), time.January, 1+rng.Intn(400), 0, 0, 0, 0, time.UTC)
		}},
	}
	for _, c := range cases {
		m := Mapped{Column: Column{Name: "c", TypeName: "t"}, Kind: c.kind}
		fast := binaryDecoder(m, c.oid)
		if fast == nil {
			t.Fatalf("kind %d: no direct decoder", c.kind)
		}
		general := genericDecoder(tm, m, c.oid, pgx.BinaryFormatCode)
		errs := 0
		for range 2000 {
			v := c.vals()
			raw, err := tm.Encode(c.oid, pgx.BinaryFormatCode, v, nil)
			if err != nil {
				t.Fatalf("kind %d: encoding %v: %v", c.kind, v, err)
			}
			want, wantErr := general(raw)
			got, err := fast(raw)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("kind %d, %v: error %v, want %v", c.kind, v, err, wantErr)
			}
			if err != nil {
				errs++
				continue
			}
			if !data.ValuesEqual(got, want) {
				t.Fatalf("kind %d, %v: got %#v, want %#v", c.kind, v, got, want)
			}
			if tt, ok := got.(time.Time); ok && tt.Location() != time.UTC {
				t.Fatalf("kind %d: %v is not in UTC", c.kind, tt)
			}
		}
		if v, err := fast(nil); v != nil || err != nil {
			t.Fatalf("kind %d: NULL decoded as %v, %v", c.kind, v, err)
		}
		if _, err := fast([]byte{1, 2, 3}); err == nil {
			t.Fatalf("kind %d: a 3-byte value decoded", c.kind)
		}
		t.Logf("kind %d: %d infinite values refused by both", c.kind, errs)
	}
}
