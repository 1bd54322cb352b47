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

package data

import (
	"bytes"
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// The int64 fast path of AppendDecimalBytes must give the bytes of the
// general big.Int path, and those must decode back to the value.
func TestAppendDecimalBytesMatchesGeneral(t *testing.T) {
	vals := []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, math.MaxInt64, math.MinInt64}
	rng := rand.New(rand.NewSource(7))
	for range 5000 {
		v := rng.Int63() >> rng.Intn(63)
		if rng.Intn(2) == 0 {
			v = -v
		}
		vals = append(vals, v)
	}
	for _, v := range vals {
		u := big.NewInt(v)
		got := AppendDecimalBytes([]byte("x"), Decimal{Unscaled: u, Scale: 3})
		want := []byte{0}
		if v != 0 {
			want = bigDecimalBytes(u)
		}
		if !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("%d: got %x, want %x", v, got[1:], want)
		}
		if back := DecimalFromBytes(got[1:], 3); back.Unscaled.Cmp(u) != 0 {
			t.Fatalf("%d: decoded back as %s", v, back.Unscaled)
		}
	}
}

// ParseDecimal's fast path for plain digits gives what the big.Rat path
// gives, for every form databases print and some they do not.
func TestParseDecimalFastPathMatchesRat(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "+0", "0.00", "-0.00", "1.50", "-1.50", ".5", "5.", "-.5", "123456789012345678", "1234567890123456789",
		"-99999999999999999999999999.999999", "0.000000000000000000000001", "12345678901234567.8", "+7.25", "00012.3400",
	} {
		fast, ok := parsePlainDecimal(s)
		if !ok {
			t.Errorf("%q: not taken by the fast path", s)
			continue
		}
		slow, err := parseDecimalRat(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if fast.Scale != slow.Scale || fast.Unscaled.Cmp(slow.Unscaled) != 0 {
			t.Errorf("%q: fast %s scale %d, big.Rat %s scale %d", s, fast.Unscaled, fast.Scale, slow.Unscaled, slow.Scale)
		}
	}
	for _, s := range []string{"", "-", ".", "1e5", "1.5e3", "1/2", "1.2.3", " 1", "0x10", "１"} {
		if _, ok := parsePlainDecimal(s); ok {
			t.Errorf("%q: taken by the fast path, want the big.Rat path to decide", s)
		}
	}
	if _, err := ParseDecimal("1e5"); err == nil {
		t.Errorf(`ParseDecimal("1e5") succeeded, want exponents refused`)
	}
}
