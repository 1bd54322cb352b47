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

// outgoing returns the active members (indices act into members) that a
// rolling update is about to replace: those whose Revision is set and is not
// the newest one. The newest revision is that of the member started last;
// when that is ambiguous (two revisions started at the same instant) or no
// member has a revision, no member is outgoing.
//
// A rollback is a rolling update like any other: the restored revision's
// pods start last. A container of an old pod that restarts during an update
// makes its revision look newest for a while; that costs extra moves, never
// work left unassigned, since outgoing members keep what they run and some
// member is always open.
func outgoing(members []Member, act []int) map[int]bool {
	newest := -1
	ambiguous := false
	for _, i := range act {
		m := members[i]
		if m.Revision == "" || m.Started.IsZero() {
			continue
		}
		switch {
		case newest < 0 || m.Started.After(members[newest].Started):
			newest, ambiguous = i, false
		case m.Started.Equal(members[newest].Started) && m.Revision != members[newest].Revision:
			ambiguous = true
		}
	}
	if newest < 0 || ambiguous {
		return nil
	}
	var out map[int]bool
	for _, i := range act {
		if r := members[i].Revision; r != "" && r != members[newest].Revision {
			if out == nil {
				out = map[int]bool{}
			}
			out[i] = true
		}
	}
	return out
}
