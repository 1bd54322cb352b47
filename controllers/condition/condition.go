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

// Package condition holds what both reconcilers' status code shares: the
// Problem that stops a pass short of a converged object, and the bound on
// condition messages.
package condition

import (
	"fmt"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// MaxMessage is the API server's bound on a condition message, in bytes.
const MaxMessage = 32 * 1024

// Problem stops a reconcile pass short of a converged object: Reason is the
// reason of the condition it turns False, Message tells the user what is
// wrong and what to do.
type Problem struct {
	Reason  string
	Message string
}

// Problemf builds a Problem with a formatted message.
func Problemf(reason, format string, args ...any) *Problem {
	return &Problem{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func (p *Problem) Error() string { return p.Reason + ": " + p.Message }

// cutMark ends a truncated message.
const cutMark = " ..."

// Truncate shortens s to at most n bytes, cutting on a rune boundary so a
// message never ends in half a UTF-8 character, and marks the cut with " ...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= len(cutMark) {
		return cutMark[:max(n, 0)]
	}
	cut := n - len(cutMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + cutMark
}

// Progress derives the Reconciling and Stalled conditions (kstatus' InProgress
// and Failed) from the conditions that must all be True for the object to be
// current. A condition that is not True (or not set yet) makes the object
// Stalled when stalled(reason) says the user must act, else Reconciling; a
// stalled condition wins over one that is merely in progress. All True: both
// False.
func Progress(required []*metav1.Condition, stalled func(reason string) bool, generation int64) (reconciling, stall metav1.Condition) {
	reconciling = metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason: v1alpha1.ReasonConverged, Message: "nothing is in progress"}
	stall = metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason: v1alpha1.ReasonConverged, Message: "nothing needs a change by the user"}
	var pending *metav1.Condition
	for _, c := range required {
		switch {
		case c == nil:
			if pending == nil {
				pending = &metav1.Condition{Reason: v1alpha1.ReasonReconciling, Message: "the operator has not reported yet"}
			}
		case c.Status == metav1.ConditionTrue:
		case stalled(c.Reason):
			stall.Status, stall.Reason, stall.Message = metav1.ConditionTrue, c.Reason, Truncate(c.Type+": "+c.Message, MaxMessage)
			reconciling.Reason, reconciling.Message = v1alpha1.ReasonStalled, "stalled: "+c.Reason
			return reconciling, stall
		case pending == nil:
			pending = &metav1.Condition{Reason: c.Reason, Message: c.Type + ": " + c.Message}
		}
	}
	if pending != nil {
		reconciling.Status, reconciling.Reason, reconciling.Message = metav1.ConditionTrue, pending.Reason, Truncate(pending.Message, MaxMessage)
		stall.Reason, stall.Message = v1alpha1.ReasonProgressing, "the operator expects the object to converge by itself"
	}
	return reconciling, stall
}
