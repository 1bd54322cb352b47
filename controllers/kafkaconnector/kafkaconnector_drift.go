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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// DefaultDriftBackoff is the revert schedule of driftPolicy enforce: the
// first revert at once, then 30s, 1m, 2m, ... up to 10m between reverts;
// 30 minutes without drift start a new series.
var DefaultDriftBackoff = Backoff{
	Initial:    v1alpha1.DriftInitialBackoff,
	Factor:     2,
	Max:        v1alpha1.DriftMaxBackoff,
	ResetAfter: v1alpha1.DriftResetAfter,
}

// ConfigHash digests a connector config (keys and values as the operator
// sends them: placeholders, never resolved Secret values), independent of
// key order.
func ConfigHash(config map[string]string) string {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		// Length prefixes keep "a=b" + "c" apart from "a" + "b=c".
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(config[k]), config[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DriftAction is what to do about the config the workers hold.
type DriftAction string

// Drift actions.
const (
	// DriftNone: the workers hold the spec's config.
	DriftNone DriftAction = ""
	// DriftWriteSpec: the spec changed since the config was last written;
	// write it (an update, not a revert).
	DriftWriteSpec DriftAction = "WriteSpec"
	// DriftRevert: the workers' config was changed behind the operator's
	// back; write the spec's config back now.
	DriftRevert DriftAction = "Revert"
	// DriftWait: as DriftRevert, but the backoff holds the revert.
	DriftWait DriftAction = "Wait"
	// DriftLeave: driftPolicy report; leave the change in place.
	DriftLeave DriftAction = "Leave"
)

// DriftInput is what the drift decision depends on.
type DriftInput struct {
	Policy v1alpha1.DriftPolicy
	// Differs: the workers' config differs from the spec's.
	Differs bool
	// SpecHash is ConfigHash of the spec's config; AppliedHash is
	// status.configHash, the config last written or found in place ("" when
	// none was recorded: treated as a spec change, as before drift policies).
	SpecHash, AppliedHash string
	// Reverts and LastRevert are status.drift's series.
	Reverts    int32
	LastRevert time.Time
	Now        time.Time
}

// DriftDecision is the outcome of DecideDrift.
type DriftDecision struct {
	Action DriftAction
	// Reverts is the series count status.drift keeps after this pass.
	Reverts int32
	// RequeueAfter, when positive, is when the held revert falls due.
	RequeueAfter time.Duration
}

// DecideDrift tells a spec change from drift and applies the policy. A
// difference while the spec still hashes to what was last applied is drift.
// Under enforce, the first revert of a series goes out at once and revert
// n+1 waits b.Delay(n-1) after revert n, so an edit war costs a bounded,
// shrinking number of writes; a series older than b.ResetAfter starts over.
func DecideDrift(in DriftInput, b Backoff) DriftDecision {
	count := in.Reverts
	sinceLast := in.Now.Sub(in.LastRevert)
	if in.LastRevert.IsZero() || sinceLast >= b.ResetAfter {
		count = 0
	}
	switch {
	case !in.Differs:
		return DriftDecision{Action: DriftNone, Reverts: count}
	case in.AppliedHash != in.SpecHash:
		return DriftDecision{Action: DriftWriteSpec, Reverts: count}
	case in.Policy == v1alpha1.DriftReport:
		return DriftDecision{Action: DriftLeave, Reverts: count}
	case count == 0:
		return DriftDecision{Action: DriftRevert, Reverts: 1}
	}
	if wait := b.Delay(count - 1); sinceLast < wait {
		return DriftDecision{Action: DriftWait, Reverts: count, RequeueAfter: wait - sinceLast}
	}
	return DriftDecision{Action: DriftRevert, Reverts: count + 1}
}

// driftOutcome is what the config step of a pass saw and did.
type driftOutcome struct {
	policy   v1alpha1.DriftPolicy
	diff     ConfigDiff
	decision DriftDecision
	// next is when a held revert is due (DriftWait).
	next time.Time
	// lastRevert is the series' last revert the decision read (zero: none).
	lastRevert time.Time
}

func (r *Reconciler) driftBackoff() Backoff {
	if r.DriftBackoff.Initial <= 0 {
		return DefaultDriftBackoff
	}
	return r.DriftBackoff
}

// reconcileConfig compares the config the workers hold with the spec's and
// writes the spec's when the spec changed, or when it drifted and the
// policy and backoff say to revert.
func (r *Reconciler) reconcileConfig(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	hash := ConfigHash(l.desired)
	if l.created {
		l.configHash = &hash
		return nil
	}
	stored, err := l.storedConfig(ctx, kc.Name)
	if err != nil {
		return fmt.Errorf("reading the config of connector %q: %w", kc.Name, err)
	}
	diff := DiffConfig(l.desired, stored)
	in := DriftInput{Policy: kc.EffectiveDriftPolicy(l.cluster), Differs: !diff.Empty(), SpecHash: hash,
		AppliedHash: kc.Status.ConfigHash, Now: r.now()}
	src := kc
	if !diff.Empty() && in.AppliedHash == hash {
		// A revert is a one-shot write counted in status: decide from the
		// API server's status, which the cache may not have caught up with.
		if live := r.live(ctx, kc); live != nil {
			src = live
		}
		in.AppliedHash = src.Status.ConfigHash
	}
	if d := src.Status.Drift; d != nil {
		in.Reverts = d.Reverts
		if d.LastRevertTime != nil {
			in.LastRevert = d.LastRevertTime.Time
		}
	}
	dec := DecideDrift(in, r.driftBackoff())
	l.drift = &driftOutcome{policy: in.Policy, diff: diff, decision: dec, lastRevert: in.LastRevert}
	switch dec.Action {
	case DriftNone:
		l.configHash = &hash
	case DriftWait:
		l.drift.next = in.Now.Add(dec.RequeueAfter)
		l.wakeWithin(dec.RequeueAfter)
	case DriftWriteSpec, DriftRevert:
		if r.validate(ctx, kc, l); l.stop() {
			return nil
		}
		if _, _, err := l.workers.PutConnectorConfig(ctx, kc.Name, l.desired); err != nil {
			return fmt.Errorf("updating the config of connector %q: %w", kc.Name, err)
		}
		l.configHash = &hash
		if dec.Action == DriftWriteSpec {
			l.configKeys = diff.Keys()
		}
	}
	return nil
}

// DriftSummary is the key-level difference as the workers see it against
// the spec: keys they added, changed and lack. Never values.
func DriftSummary(d ConfigDiff) string {
	var parts []string
	add := func(what string, keys []string) {
		if len(keys) > 0 {
			parts = append(parts, what+" "+strings.Join(keys, ", "))
		}
	}
	add("added on the workers:", d.Removed)
	add("changed:", d.Changed)
	add("removed on the workers:", d.Added)
	return strings.Join(parts, "; ")
}

// driftStatus fills status.configHash, status.drift and the ConfigDrift
// condition from what the config step recorded in l.
func driftStatus(kc *v1alpha1.KafkaConnector, l *connectorLoop, s *v1alpha1.KafkaConnectorStatus, now metav1.Time, set func(metav1.Condition)) {
	if l.configHash != nil {
		s.ConfigHash = *l.configHash
	}
	o := l.drift
	if o == nil {
		if l.created {
			set(metav1.Condition{Type: v1alpha1.KafkaConnectorConfigDrift, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInSync,
				Message: "the workers hold the spec's config"})
		}
		return
	}
	dec := o.decision
	if dec.Action == DriftNone || dec.Action == DriftWriteSpec {
		if s.Drift != nil {
			s.Drift.Reverts = dec.Reverts
		}
		// A Reverted condition stays until the next drift: it is the record
		// of what was written back.
		if c := meta.FindStatusCondition(s.Conditions, v1alpha1.KafkaConnectorConfigDrift); c == nil || c.Reason != v1alpha1.ReasonDriftReverted || c.Status != metav1.ConditionFalse {
			set(metav1.Condition{Type: v1alpha1.KafkaConnectorConfigDrift, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInSync,
				Message: "the workers hold the spec's config"})
		}
		return
	}
	summary := DriftSummary(o.diff)
	d := &v1alpha1.ConfigDriftStatus{Added: o.diff.Removed, Changed: o.diff.Changed, Removed: o.diff.Added, Reverts: dec.Reverts, DetectedTime: &now}
	if !o.lastRevert.IsZero() {
		d.LastRevertTime = &metav1.Time{Time: o.lastRevert}
	}
	if old := kc.Status.Drift; old != nil {
		if old.DetectedTime != nil && sameKeys(old, d) {
			d.DetectedTime = old.DetectedTime // the same drift, seen again
		}
	}
	switch dec.Action {
	case DriftRevert:
		d.LastRevertTime = &now
		set(metav1.Condition{Type: v1alpha1.KafkaConnectorConfigDrift, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonDriftReverted,
			Message: fmt.Sprintf("the config was changed on the workers outside the KafkaConnector (%s); wrote the spec's config back (driftPolicy enforce, revert %d of this series)", summary, dec.Reverts)})
	case DriftWait:
		set(metav1.Condition{Type: v1alpha1.KafkaConnectorConfigDrift, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRevertBackedOff,
			Message: fmt.Sprintf("the config keeps being changed on the workers outside the KafkaConnector (%s); after %d revert(s) the next waits until %s (driftPolicy enforce)", summary, dec.Reverts, o.next.UTC().Format(time.RFC3339))})
	case DriftLeave:
		set(metav1.Condition{Type: v1alpha1.KafkaConnectorConfigDrift, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDriftReported,
			Message: fmt.Sprintf("the workers' config differs from the spec (%s); left in place (driftPolicy report): a change of the spec overwrites it", summary)})
	}
	s.Drift = d
}

func sameKeys(a, b *v1alpha1.ConfigDriftStatus) bool {
	return strings.Join(a.Added, ",") == strings.Join(b.Added, ",") && strings.Join(a.Changed, ",") == strings.Join(b.Changed, ",") &&
		strings.Join(a.Removed, ",") == strings.Join(b.Removed, ",")
}

// emitDriftEvents warns, naming the keys and never the values, at each
// revert, when a revert is first held back, and when report first sees a
// drift (or other keys).
func (r *Reconciler) emitDriftEvents(kc *v1alpha1.KafkaConnector, s *v1alpha1.KafkaConnectorStatus, l *connectorLoop) {
	o := l.drift
	if o == nil {
		return
	}
	summary := DriftSummary(o.diff)
	switch o.decision.Action {
	case DriftRevert:
		r.event(kc, corev1.EventTypeWarning, v1alpha1.KafkaConnectorConfigDrift, "Revert",
			"connector %s: config changed outside the KafkaConnector (%s); wrote the spec's config back (revert %d)", kc.Name, summary, o.decision.Reverts)
	case DriftWait, DriftLeave:
		c, ok := became(kc.Status.Conditions, s.Conditions, v1alpha1.KafkaConnectorConfigDrift, metav1.ConditionTrue)
		if ok || (kc.Status.Drift != nil && s.Drift != nil && !sameKeys(kc.Status.Drift, s.Drift)) {
			r.event(kc, corev1.EventTypeWarning, v1alpha1.KafkaConnectorConfigDrift, "Drift", "connector %s: %s", kc.Name, c.Message)
		}
	}
}
