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

package kafkaconnector

import (
	"time"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// AutoRestartPolicy is spec.autoRestart in plain form.
type AutoRestartPolicy struct {
	// Enabled turns automatic restarts of failed connectors and tasks on.
	Enabled bool
	// MaxRestarts bounds consecutive restarts; nil means no bound.
	MaxRestarts *int32
}

// Backoff is the autoRestart schedule: the n-th consecutive restart (n from
// 0) waits Initial*Factor^n after the previous one, at most Max. A connector
// healthy for ResetAfter since its last restart starts again at n = 0.
type Backoff struct {
	Initial    time.Duration
	Factor     float64
	Max        time.Duration
	ResetAfter time.Duration
}

// DefaultBackoff is the schedule the API documents for spec.autoRestart:
// 2s, 4s, 8s, ... up to 5 minutes; a connector running healthily for 10
// minutes gets its count reset.
var DefaultBackoff = Backoff{
	Initial:    v1alpha1.AutoRestartInitialBackoff,
	Factor:     2,
	Max:        v1alpha1.AutoRestartMaxBackoff,
	ResetAfter: v1alpha1.AutoRestartResetAfter,
}

// Delay is the wait before restart number n (0-based) of a series.
func (b Backoff) Delay(n int32) time.Duration {
	d := float64(b.Initial)
	for i := int32(0); i < n; i++ {
		d *= b.Factor
		if time.Duration(d) >= b.Max {
			return b.Max
		}
	}
	if time.Duration(d) > b.Max {
		return b.Max
	}
	return time.Duration(d)
}

// AutoRestartInput is the observed state that drives automatic restarts.
type AutoRestartInput struct {
	Policy AutoRestartPolicy
	// Failed: the connector or at least one of its tasks is FAILED.
	Failed bool
	// HeldByCrash: the workers hold it FAILED because its code crashed a
	// worker process (connectapi.HeldByCrash); a restart would crash the
	// next worker, so only a person restarts it.
	HeldByCrash bool
	// Count is the number of consecutive automatic restarts so far (status).
	Count int32
	// LastRestart is when the last automatic restart was sent (status);
	// zero when none.
	LastRestart time.Time
	// Now is the reconcile's clock reading.
	Now time.Time
}

// AutoRestartDecision says what to do about a failed connector.
type AutoRestartDecision struct {
	// Restart: send POST /connectors/{c}/restart?includeTasks=true&onlyFailed=true now.
	Restart bool
	// Count is the value status should hold after this reconcile.
	Count int32
	// RequeueAfter, when positive, is when the next restart falls due.
	RequeueAfter time.Duration
	// GaveUp: the connector is failed and MaxRestarts is exhausted.
	GaveUp bool
}

// DecideAutoRestart applies the policy and the backoff schedule. The first
// restart of a series goes out at once (the status keeps no failure time to
// wait from); restart n+1 waits Delay(n) after restart n; the count resets
// once the connector has been healthy for ResetAfter. A restart by hand (the
// restart annotation) resets the count: the caller passes Count 0 then.
func DecideAutoRestart(in AutoRestartInput, b Backoff) AutoRestartDecision {
	count := in.Count
	sinceLast := in.Now.Sub(in.LastRestart)
	if in.LastRestart.IsZero() {
		sinceLast = time.Duration(1<<63 - 1)
	}
	if !in.Failed {
		if count > 0 && sinceLast >= b.ResetAfter {
			count = 0
		}
		if count > 0 {
			// Re-check when the count may reset.
			return AutoRestartDecision{Count: count, RequeueAfter: b.ResetAfter - sinceLast}
		}
		return AutoRestartDecision{Count: count}
	}
	if !in.Policy.Enabled || in.HeldByCrash {
		return AutoRestartDecision{Count: count}
	}
	if in.Policy.MaxRestarts != nil && count >= *in.Policy.MaxRestarts {
		return AutoRestartDecision{Count: count, GaveUp: true}
	}
	if count == 0 || sinceLast >= b.Delay(count-1) {
		return AutoRestartDecision{Restart: true, Count: count + 1}
	}
	return AutoRestartDecision{Count: count, RequeueAfter: b.Delay(count-1) - sinceLast}
}
