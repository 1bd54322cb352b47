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
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// The fast numeric encoding gives pgx's bytes for every value it takes,
// and the values it leaves to pgx still encode.
func TestNumericCodecMatchesPgx(t *testing.T) {
	fast := pgtype.NewMap()
	registerNumeric(fast)
	if _, ok := fast.PlanEncode(pgtype.NumericOID, pgtype.BinaryFormatCode, pgtype.Numeric{}).(smallNumericPlan); !ok {
		t.Fatal("the registered codec does not plan the fast encoding for pgtype.Numeric")
	}
	plain := pgtype.NewMap()
	rng := rand.New(rand.NewPCG(1, 2))
	var unscaled []*big.Int
	for _, u := range []int64{0, 1, -1, 9, 99, 999, 9999, 10000, 10001, 99999999, 100000000, 1e15 - 1, -(1e15 - 1), 1e15, -1e15, math.MaxInt64, math.MinInt64} {
		unscaled = append(unscaled, big.NewInt(u))
	}
	for range 3000 {
		u := rng.Int64N(int64(math.Pow10(1 + rng.IntN(16))))
		if rng.IntN(2) == 0 {
			u = -u
		}
		unscaled = append(unscaled, big.NewInt(u))
	}
	huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	unscaled = append(unscaled, huge, nil)
	fastOnes := 0
	for _, u := range unscaled {
		for exp := int32(-20); exp <= 3; exp++ {
			n := pgtype.Numeric{Int: u, Exp: exp, Valid: true}
			want, err := plain.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fast.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%v e%d: got % x, pgx % x", u, exp, got, want)
			}
			if _, ok := appendSmallNumeric(nil, n); ok {
				fastOnes++
			}
		}
	}
	for _, n := range []pgtype.Numeric{{NaN: true, Valid: true}, {InfinityModifier: pgtype.Infinity, Valid: true}, {}} {
		want, _ := plain.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, n, nil)
		got, err := fast.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, n, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v: got % x (%v), pgx % x", n, got, err, want)
		}
	}
	if fastOnes < len(unscaled)*10 {
		t.Fatalf("only %d values took the fast encoding", fastOnes)
	}
}

func BenchmarkNumericEncode(b *testing.B) {
	n := pgtype.Numeric{Int: big.NewInt(123456), Exp: -2, Valid: true}
	for _, c := range []struct {
		name string
		fast bool
	}{{"pgx", false}, {"fast", true}} {
		b.Run(c.name, func(b *testing.B) {
			m := pgtype.NewMap()
			if c.fast {
				registerNumeric(m)
			}
			buf := make([]byte, 0, 64)
			for b.Loop() {
				var err error
				if buf, err = m.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, n, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
