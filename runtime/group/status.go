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
	"fmt"
	"math/rand/v2"
	"time"
)

// Waiting says what the member waits for, for readiness checks and logs:
// the step of the rebalance it is in and for how long, and the failures in
// a row with the last error.
func (m *Member) Waiting() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := fmt.Sprintf("group %q: %s for %s", m.cfg.Group, m.phase, time.Since(m.phaseSince).Round(100*time.Millisecond))
	if m.failures > 0 && m.lastErr != nil {
		s += fmt.Sprintf(" (%d failed attempts in a row; last: %v)", m.failures, m.lastErr)
	}
	return s
}

// setPhase records what the member waits for now.
func (m *Member) setPhase(p string) {
	m.mu.Lock()
	m.phase, m.phaseSince = p, time.Now()
	m.mu.Unlock()
}

// failed records a failed rebalance and returns the pause before the next
// attempt: RetryBackoff doubled per failure in a row, capped at
// MaxRetryBackoff, less up to a fifth at random so members that failed
// together do not retry in step.
func (m *Member) failed(err error) time.Duration {
	m.mu.Lock()
	m.failures++
	m.lastErr = err
	n := m.failures
	m.mu.Unlock()
	d := m.cfg.RetryBackoff
	for i := 1; i < n && d < m.cfg.MaxRetryBackoff; i++ {
		d *= 2
	}
	d = min(d, m.cfg.MaxRetryBackoff)
	d -= time.Duration(rand.Int64N(int64(d)/5 + 1))
	m.log.Warn("group rebalance failed; retrying", "err", err, "attempt", n, "backoff", d)
	m.setPhase(fmt.Sprintf("backing off %s before joining again", d.Round(time.Millisecond)))
	return d
}

// succeeded clears the failure count after an applied assignment.
func (m *Member) succeeded() {
	m.mu.Lock()
	if m.failures > 0 {
		m.log.Info("group rebalance succeeded after failed attempts", "attempts", m.failures+1)
	}
	m.failures, m.lastErr = 0, nil
	m.phase, m.phaseSince = "in the group", time.Now()
	m.mu.Unlock()
}

// instanceID is the static member id for requests, nil for a dynamic member.
func (m *Member) instanceID() *string {
	if m.cfg.InstanceID == "" {
		return nil
	}
	id := m.cfg.InstanceID
	return &id
}
