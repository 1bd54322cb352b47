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

package controllers

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	ctrl "sigs.k8s.io/controller-runtime"
)

// LeaderElectionID names the Lease the operator's replicas elect a leader with.
const LeaderElectionID = "conveyor-operator.connect.conveyor.dev"

// The leader's Lease timings. The leader renews its Lease every RetryPeriod:
// one API write each time, the operator's only write when nothing changes.
// client-go's defaults (15s, 10s, 2s) renew 30 times a minute, twice the
// operator's every other write at rest with 1000 connectors (docs/benchmarks.md);
// these renew 4 times a minute. The cost is a slower hand-over after a crash:
// a standby takes the Lease at most LeaseDuration+RetryPeriod (75s) after the
// leader's last renewal. The operator is not on the data path (workers run
// their connectors without it), so only reconciles wait. A leader that stops
// on purpose (a rolling update) releases the Lease at once
// (LeaderElectionReleaseOnCancel), and the standby takes it within
// RetryPeriod. Flags change them (LeaderTimings): the chaos tier, which kills
// the operator, takes client-go's defaults.
const (
	LeaseDuration = 60 * time.Second
	RenewDeadline = 40 * time.Second
	RetryPeriod   = 15 * time.Second
)

// LeaderTimings are the leader's Lease timings (the operator's flags
// --leader-elect-lease-duration, --leader-elect-renew-deadline and
// --leader-elect-retry-period; the chart's leaderElection values).
type LeaderTimings struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultLeaderTimings are the operator's defaults (see the constants above).
var DefaultLeaderTimings = LeaderTimings{LeaseDuration, RenewDeadline, RetryPeriod}

// Validate checks what client-go's leader elector requires, naming the flags.
func (t LeaderTimings) Validate() error {
	switch {
	case t.LeaseDuration <= 0 || t.RenewDeadline <= 0 || t.RetryPeriod <= 0:
		return fmt.Errorf("--leader-elect-lease-duration (%s), --leader-elect-renew-deadline (%s) and --leader-elect-retry-period (%s) must be positive durations",
			t.LeaseDuration, t.RenewDeadline, t.RetryPeriod)
	case t.LeaseDuration <= t.RenewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s)", t.LeaseDuration, t.RenewDeadline)
	case t.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(t.RetryPeriod)):
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than %.1f times --leader-elect-retry-period (%s)",
			t.RenewDeadline, leaderelection.JitterFactor, t.RetryPeriod)
	}
	return nil
}

// LeaderElection sets the manager options of leader election in namespace
// (the operator's own; empty: the in-cluster namespace), on when enabled,
// with timings t (validated by the caller).
func LeaderElection(opts *ctrl.Options, enabled bool, namespace string, t LeaderTimings) {
	lease, renew, retry := t.LeaseDuration, t.RenewDeadline, t.RetryPeriod
	opts.LeaderElection = enabled
	opts.LeaderElectionID = LeaderElectionID
	opts.LeaderElectionNamespace = namespace
	opts.LeaderElectionReleaseOnCancel = true
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &lease, &renew, &retry
}
