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
	"time"

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
// RetryPeriod.
const (
	LeaseDuration = 60 * time.Second
	RenewDeadline = 40 * time.Second
	RetryPeriod   = 15 * time.Second
)

// LeaderElection sets the manager options of leader election in namespace
// (the operator's own; empty: the in-cluster namespace), on when enabled.
func LeaderElection(opts *ctrl.Options, enabled bool, namespace string) {
	lease, renew, retry := LeaseDuration, RenewDeadline, RetryPeriod
	opts.LeaderElection = enabled
	opts.LeaderElectionID = LeaderElectionID
	opts.LeaderElectionNamespace = namespace
	opts.LeaderElectionReleaseOnCancel = true
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &lease, &renew, &retry
}
