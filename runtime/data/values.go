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
	"time"
)

// ValuesEqual compares two data values deeply: bytes by content, times by
// instant, decimals by value and scale, structs field by field, and maps
// of either Go map type by entries.
func ValuesEqual(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case []byte:
		bv, ok := b.([]byte)
		return ok && bytes.Equal(av, bv)
	case JSONText:
		bv, ok := b.(JSONText)
		return ok && bytes.Equal(av.Text, bv.Text) && bytes.Equal(av.Raw, bv.Raw)
	case time.Time:
		bv, ok := b.(time.Time)
		return ok && av.Equal(bv)
	case Decimal:
		bv, ok := b.(Decimal)
		return ok && av.Equal(bv)
	case *Struct:
		bv, ok := b.(*Struct)
		return ok && av.Equal(bv)
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !ValuesEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	case map[any]any:
		return mapsEqual(av, b)
	case map[string]any:
		m := make(map[any]any, len(av))
		for k, v := range av {
			m[k] = v
		}
		return mapsEqual(m, b)
	}
	return a == b
}

func mapsEqual(a map[any]any, b any) bool {
	var bm map[any]any
	switch bv := b.(type) {
	case map[any]any:
		bm = bv
	case map[string]any:
		bm = make(map[any]any, len(bv))
		for k, v := range bv {
			bm[k] = v
		}
	default:
		return false
	}
	if len(a) != len(bm) {
		return false
	}
	for k, v := range a {
		w, ok := bm[k]
		if !ok || !ValuesEqual(v, w) {
			return false
		}
	}
	return true
}
