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

package assignor

import (
	"cmp"
	"maps"
	"slices"
)

// balance places items on m members. kept[i] is what member i keeps (it may be
// shed down to its target when allowRevoke), preferred[i] is unowned work that
// should go to i if it has room, free is unowned work for anyone. A member
// with closed[i] (one about to leave) keeps its own and its preferred work
// but takes none of the rest while another member is open. It returns each
// member's final items and what each must stop.
func balance[K comparable](kind itemKind[K], kept, preferred [][]K, free []K, allowRevoke bool, closed []bool) (final, revoked [][]K) {
	m := len(kept)
	final = make([][]K, m)
	revoked = make([][]K, m)
	if m == 0 {
		return final, revoked
	}
	total := len(free)
	load := make([]int, m)
	for i := range m {
		load[i] = len(kept[i]) + len(preferred[i])
		total += load[i]
	}
	// The members that hold the most get the larger targets: fewest moves.
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(load[b], load[a]) })
	base, extra := total/m, total%m
	target := make([]int, m)
	for r, i := range order {
		target[i] = base
		if r < extra {
			target[i]++
		}
	}

	// A group's fair share per member, for shedding.
	share := map[string]int{}
	if allowRevoke {
		for _, list := range [][][]K{kept, preferred, {free}} {
			for _, items := range list {
				for _, it := range items {
					share[kind.group(it)]++
				}
			}
		}
		for g, n := range share {
			share[g] = (n + m - 1) / m
		}
	}

	counts := make([]map[string]int, m)
	var pool []K
	for i := range m {
		items := kept[i]
		if allowRevoke && len(items) > target[i] {
			items, revoked[i] = shed(kind, items, len(items)-target[i], share)
		}
		room := max(0, target[i]-len(items))
		take := min(room, len(preferred[i]))
		final[i] = make([]K, 0, max(target[i], len(items)))
		final[i] = append(final[i], items...)
		final[i] = append(final[i], preferred[i][:take]...)
		pool = append(pool, preferred[i][take:]...)
		counts[i] = map[string]int{}
		for _, it := range final[i] {
			counts[i][kind.group(it)]++
		}
	}
	pool = append(pool, free...)
	slices.SortFunc(pool, kind.compare)

	// Place each unowned item on an open member below its target,
	// preferring the member with the fewest items of the same group
	// (spreading a connector's tasks), then the least loaded, then the
	// first.
	open := make([]bool, m)
	anyOpen := false
	for i := range m {
		open[i] = len(closed) <= i || !closed[i]
		anyOpen = anyOpen || open[i]
	}
	if !anyOpen {
		for i := range open {
			open[i] = true
		}
	}
	pick := func(g string, withinTarget bool) int {
		best := -1
		for i := range m {
			if !open[i] || (withinTarget && len(final[i]) >= target[i]) {
				continue
			}
			if best < 0 || counts[i][g] < counts[best][g] ||
				(counts[i][g] == counts[best][g] && len(final[i]) < len(final[best])) {
				best = i
			}
		}
		return best
	}
	for _, it := range pool {
		g := kind.group(it)
		best := pick(g, true)
		if best < 0 {
			// Every open member is at its target: closed members leave
			// their targets unfilled, or kept work exceeds the targets
			// (no revocations). An open member takes it all the same.
			best = pick(g, false)
		}
		final[best] = append(final[best], it)
		counts[best][g]++
	}
	return final, revoked
}

// shed removes k items from items: from the groups the member holds most of
// beyond their fair share (so a connector's tasks spread), then most of in
// all, the highest first.
func shed[K comparable](kind itemKind[K], items []K, k int, share map[string]int) (keep, drop []K) {
	byGroup := map[string][]K{}
	for _, it := range items {
		g := kind.group(it)
		byGroup[g] = append(byGroup[g], it)
	}
	groups := slices.Sorted(maps.Keys(byGroup))
	for _, g := range groups {
		slices.SortFunc(byGroup[g], kind.compare)
	}
	dropped := map[K]bool{}
	for range k {
		best := ""
		for _, g := range groups {
			n, bestN := len(byGroup[g]), len(byGroup[best])
			if n == 0 {
				continue
			}
			if bestN == 0 {
				best = g
				continue
			}
			if excess, bestExcess := n-share[g], bestN-share[best]; excess > bestExcess || excess == bestExcess && n > bestN {
				best = g
			}
		}
		list := byGroup[best]
		it := list[len(list)-1]
		byGroup[best] = list[:len(list)-1]
		dropped[it] = true
		drop = append(drop, it)
	}
	for _, it := range items {
		if !dropped[it] {
			keep = append(keep, it)
		}
	}
	return keep, drop
}
