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
