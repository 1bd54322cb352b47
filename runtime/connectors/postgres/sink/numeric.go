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
	"github.com/jackc/pgx/v5/pgtype"
)

// numericCodec is pgx's numeric codec with a fast binary encoding of
// decimals whose unscaled value fits in an int64 (pgx works with big.Int
// divisions, about 2µs a value, a fifth of the sink's own CPU on decimal
// columns). It produces the same bytes as pgx; other values go to pgx.
type numericCodec struct{ pgtype.NumericCodec }

// registerNumeric makes the connection's type map encode numerics with
// numericCodec.
func registerNumeric(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "numeric", OID: pgtype.NumericOID, Codec: numericCodec{}})
}

func (c numericCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	plan := c.NumericCodec.PlanEncode(m, oid, format, value)
	if _, ok := value.(pgtype.Numeric); ok && plan != nil && format == pgtype.BinaryFormatCode {
		return smallNumericPlan{plan}
	}
	return plan
}

type smallNumericPlan struct{ pgx pgtype.EncodePlan }

func (p smallNumericPlan) Encode(value any, buf []byte) ([]byte, error) {
	if out, ok := appendSmallNumeric(buf, value.(pgtype.Numeric)); ok {
		return out, nil
	}
	return p.pgx.Encode(value, buf)
}

// appendSmallNumeric appends PostgreSQL's binary numeric (digit count,
// weight, sign, display scale, then base-10000 digits) for n when its
// unscaled value is below 10^15 and its scale within 0..14, the same
// bytes as pgx's encodeNumericBinary; ok is false for other values.
func appendSmallNumeric(buf []byte, n pgtype.Numeric) ([]byte, bool) {
	if !n.Valid || n.NaN || n.InfinityModifier != pgtype.Finite || n.Int == nil || !n.Int.IsInt64() || n.Exp > 0 || n.Exp < -14 {
		return buf, false
	}
	u := n.Int.Int64()
	if u <= -1e15 || u >= 1e15 {
		return buf, false
	}
	var sign uint16
	abs := uint64(u)
	if u < 0 {
		sign, abs = 0x4000, uint64(-u)
	}
	// Like pgx: make the exponent a multiple of 4, so that the fraction
	// splits into whole base-10000 digits.
	exp := n.Exp
	switch exp % 4 {
	case -3:
		exp, abs = exp-1, abs*10
	case -2:
		exp, abs = exp-2, abs*100
	case -1:
		exp, abs = exp-3, abs*1000
	}
	var whole, frac [8]uint16 // least significant first; < 10^18 has at most 5 whole digits
	nw, nf := 0, 0
	w := abs
	if exp < 0 {
		div := uint64(1)
		for range -exp {
			div *= 10
		}
		w = abs / div
		// pgx adds the divisor so that leading zero digits of the
		// fraction are kept, and stops at that leading 1.
		for f := abs%div + div; f != 1; f /= 10000 {
			frac[nf] = uint16(f % 10000)
			nf++
		}
	}
	for ; w != 0; w /= 10000 {
		whole[nw] = uint16(w % 10000)
		nw++
	}
	weight := int(exp)/4 - 1 + nf
	if nw > 0 {
		weight = nw - 1
	}
	buf = append(buf, byte((nw+nf)>>8), byte(nw+nf), byte(uint16(weight)>>8), byte(weight), byte(sign>>8), byte(sign), byte(-n.Exp>>8), byte(-n.Exp))
	for i := nw - 1; i >= 0; i-- {
		buf = append(buf, byte(whole[i]>>8), byte(whole[i]))
	}
	for i := nf - 1; i >= 0; i-- {
		buf = append(buf, byte(frac[i]>>8), byte(frac[i]))
	}
	return buf, true
}
