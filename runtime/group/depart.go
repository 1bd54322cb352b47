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

package group

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Departure removal: a static member (KIP-345) outlives its process. The
// coordinator drops it only when its session expires, and a rebalance waits
// for every known member, so the identity of a worker that is gone for good
// (a deleted pod, a scale-down, a pod replaced under a new name) can hold a
// rebalance open until the rebalance deadline. kfake does worse (see
// join.go): it starts no session for a member until a JoinGroup answer
// reaches it, so a worker killed while its JoinGroup was held stays a member
// with no session at all. Whoever knows which workers are gone for good (the
// operator, which sees the pods) removes their static members by instance id
// with Kafka's admin call for it (LeaveGroup v3+ naming instance ids, as
// Kafka's AdminClient.removeMembersFromConsumerGroup sends), in the worker
// group and in the sink groups, whose task consumers are static members too.

// Owner maps a static member's instance id to the worker it belongs to, or
// "" when the member is not one of the cluster's (it is left alone).
type Owner func(instanceID string) string

// WorkerItself is the Owner of the worker group: a worker's instance id is
// the worker's own name.
func WorkerItself(instanceID string) string { return instanceID }

// Departed returns the instance ids of the static members whose worker
// alive does not know, sorted.
func Departed(members []kadm.DescribedGroupMember, owner Owner, alive func(worker string) bool) []string {
	var out []string
	for _, m := range members {
		if m.InstanceID == nil {
			continue
		}
		if w := owner(*m.InstanceID); w != "" && !alive(w) {
			out = append(out, *m.InstanceID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RemoveDeparted removes from each group the static members whose worker is
// gone, and returns the removed instance ids per group. It describes the
// groups first and asks workers for the workers that exist after that, so a
// worker that joined just before the call is known to workers (a worker
// exists before its process can join). Members that left meanwhile
// (UNKNOWN_MEMBER_ID) count as removed.
func RemoveDeparted(ctx context.Context, adm *kadm.Client, groups map[string]Owner, workers func(ctx context.Context) (map[string]bool, error), reason string) (map[string][]string, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for g := range groups {
			if !yield(g) {
				return
			}
		}
	})
	described, err := adm.DescribeGroups(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describing groups %v: %w", names, err)
	}
	live, err := workers(ctx)
	if err != nil {
		return nil, err
	}
	alive := func(w string) bool { return live[w] }
	out := map[string][]string{}
	var errs []error
	for _, g := range names {
		d, ok := described[g]
		if !ok || d.Err != nil {
			continue // no such group yet (GROUP_ID_NOT_FOUND or Dead): nothing to remove
		}
		gone := Departed(d.Members, groups[g], alive)
		if len(gone) == 0 {
			continue
		}
		resps, err := adm.LeaveGroup(ctx, kadm.LeaveGroup(g).InstanceIDs(gone...).Reason(reason))
		if err != nil {
			errs = append(errs, fmt.Errorf("removing members %v of group %q: %w", gone, g, err))
			continue
		}
		for _, id := range gone {
			r, ok := resps[id]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("removing member %q of group %q: no answer for it", id, g))
			case r.Err != nil && !errors.Is(r.Err, kerr.UnknownMemberID):
				errs = append(errs, fmt.Errorf("removing member %q of group %q: %w", id, g, r.Err))
			default:
				out[g] = append(out[g], id)
			}
		}
	}
	return out, errors.Join(errs...)
}
