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
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeats keeps the session alive and notices rebalances and a lost
// membership. It heartbeats during joins too: the coordinator then answers
// REBALANCE_IN_PROGRESS but keeps the session.
func (m *Member) heartbeats(ctx context.Context) {
	t := time.NewTicker(m.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.mu.Lock()
		gen := m.gen
		joining := m.rebalancing
		m.mu.Unlock()
		if gen.ID <= 0 {
			continue
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group = m.cfg.Group
		req.Generation = gen.ID
		req.MemberID = gen.MemberID
		req.InstanceID = m.instanceID()
		rctx, cancel := context.WithTimeout(ctx, m.cfg.SessionTimeout)
		resp, err := req.RequestWith(rctx, m.cfg.Client)
		cancel()
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		if m.gen != gen { // a newer join answered meanwhile
			m.mu.Unlock()
			continue
		}
		if err != nil {
			silent := time.Since(m.lastHB)
			if silent >= m.cfg.SessionTimeout && m.abortJoin != nil {
				// The held JoinGroup waits on a coordinator that does not
				// answer this member any more: join again.
				m.abortJoin(errJoinAbandoned)
				m.abortJoin = nil
			}
			if silent >= m.cfg.SessionTimeout && !joining && !m.lost {
				m.lost = true
				m.mu.Unlock()
				m.log.Warn("no heartbeat answered for a session timeout", "err", err, "silent", silent)
				m.poke()
				continue
			}
			m.mu.Unlock()
			m.log.Debug("heartbeat failed", "err", err)
			continue
		}
		m.lastHB = time.Now()
		herr := kerr.ErrorForCode(resp.ErrorCode)
		poke := false
		switch {
		case herr == nil:
		case joining && (errors.Is(herr, kerr.UnknownMemberID) || errors.Is(herr, kerr.FencedInstanceID)):
			// The coordinator dropped this member while its JoinGroup was
			// held: kfake never answers such a JoinGroup, so give it up
			// and join again as a new member.
			if m.abortJoin != nil {
				m.log.Warn("the coordinator dropped this member while its JoinGroup was held; joining again", "err", herr)
				m.lost = true
				m.memberID, m.gen = "", Generation{}
				m.abortJoin(errJoinAbandoned)
				m.abortJoin = nil
			}
		case joining:
			// While joining, REBALANCE_IN_PROGRESS and ILLEGAL_GENERATION
			// are expected; the join itself reports a lost membership.
		case errors.Is(herr, kerr.RebalanceInProgress), errors.Is(herr, kerr.IllegalGeneration):
			m.wantRejoin, m.rebalancing, poke = true, true, true
		case errors.Is(herr, kerr.UnknownMemberID), errors.Is(herr, kerr.FencedInstanceID):
			m.lost, m.rebalancing, poke = true, true, true
		default:
			m.log.Warn("heartbeat refused", "err", herr)
		}
		m.mu.Unlock()
		if poke {
			m.poke()
		}
	}
}
