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
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// TestLeaderTimingsValidate: what Validate accepts, client-go's leader elector
// accepts too, and what it refuses names the flag to fix.
func TestLeaderTimingsValidate(t *testing.T) {
	cases := []struct {
		name string
		t    LeaderTimings
		want string // empty: valid
	}{
		{"defaults", DefaultLeaderTimings, ""},
		{"client-go's", LeaderTimings{15 * time.Second, 10 * time.Second, 2 * time.Second}, ""},
		{"zero retry", LeaderTimings{15 * time.Second, 10 * time.Second, 0}, "must be positive"},
		{"lease not longer than renew", LeaderTimings{10 * time.Second, 10 * time.Second, 2 * time.Second}, "--leader-elect-lease-duration (10s) must be longer than --leader-elect-renew-deadline (10s)"},
		{"renew within the retry's jitter", LeaderTimings{60 * time.Second, 12 * time.Second, 10 * time.Second}, "--leader-elect-renew-deadline (12s) must be longer than 1.2 times --leader-elect-retry-period (10s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.t.Validate()
			_, elErr := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock:          &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "a"}},
				LeaseDuration: tc.t.LeaseDuration, RenewDeadline: tc.t.RenewDeadline, RetryPeriod: tc.t.RetryPeriod,
				Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
			})
			if tc.want == "" {
				if err != nil || elErr != nil {
					t.Fatalf("Validate: %v, client-go: %v; want both nil", err, elErr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v; want an error containing %q", err, tc.want)
			}
			if elErr == nil {
				t.Fatalf("client-go accepts %+v, which Validate refuses", tc.t)
			}
		})
	}
}
