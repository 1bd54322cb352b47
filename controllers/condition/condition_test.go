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

package condition

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short stays", "abc", 10, "abc"},
		{"exact stays", "abcdefghij", 10, "abcdefghij"},
		{"ascii cut", "abcdefghijk", 10, "abcdef ..."},
		// "é" is 2 bytes at 5-6: a cut at byte 6 would split it.
		{"never half a rune", "abcdeéfghijk", 10, "abcde ..."},
		// "€" is 3 bytes at 4-6.
		{"three-byte rune", "abcd€fghijk", 10, "abcd ..."},
		{"tiny bound", "abcdef", 3, " .."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.in, tc.n)
			if got != tc.want {
				t.Fatalf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
			if len(got) > tc.n || !utf8.ValidString(got) {
				t.Fatalf("Truncate(%q, %d) = %q: %d bytes, valid UTF-8 %v", tc.in, tc.n, got, len(got), utf8.ValidString(got))
			}
		})
	}
	// The API's bound, with a message of multi-byte runes straddling it.
	long := strings.Repeat("ü", MaxMessage)
	got := Truncate(long, MaxMessage)
	if len(got) > MaxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, cutMark) {
		t.Fatalf("a %d-byte message of 2-byte runes cut to %d bytes, valid UTF-8 %v", len(long), len(got), utf8.ValidString(got))
	}
}

// TestProgress: the Reconciling and Stalled conditions kstatus reads, from
// the conditions an object needs True.
func TestProgress(t *testing.T) {
	c := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: "m"}
	}
	stalled := func(r string) bool { return r == "Broken" }
	for _, tc := range []struct {
		name                   string
		in                     []*metav1.Condition
		reconciling, stall     metav1.ConditionStatus
		recReason, stallReason string
	}{
		{"all true", []*metav1.Condition{c("True", "Ok"), c("True", "Ok")}, "False", "False", v1alpha1.ReasonConverged, v1alpha1.ReasonConverged},
		{"not reported yet", []*metav1.Condition{nil}, "True", "False", v1alpha1.ReasonReconciling, v1alpha1.ReasonProgressing},
		{"waiting", []*metav1.Condition{c("True", "Ok"), c("False", "Pending")}, "True", "False", "Pending", v1alpha1.ReasonProgressing},
		{"unknown waits", []*metav1.Condition{c("Unknown", "Checking")}, "True", "False", "Checking", v1alpha1.ReasonProgressing},
		{"stalled", []*metav1.Condition{c("False", "Broken")}, "False", "True", v1alpha1.ReasonStalled, "Broken"},
		{"stalled wins over waiting", []*metav1.Condition{c("False", "Pending"), c("False", "Broken")}, "False", "True", v1alpha1.ReasonStalled, "Broken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, st := Progress(tc.in, stalled, 7)
			if rec.Type != v1alpha1.ConditionReconciling || st.Type != v1alpha1.ConditionStalled || rec.ObservedGeneration != 7 || st.ObservedGeneration != 7 {
				t.Fatalf("types/generations: %+v %+v", rec, st)
			}
			if rec.Status != tc.reconciling || st.Status != tc.stall || rec.Reason != tc.recReason || st.Reason != tc.stallReason {
				t.Fatalf("Reconciling %s/%s, Stalled %s/%s; want %s/%s and %s/%s", rec.Status, rec.Reason, st.Status, st.Reason,
					tc.reconciling, tc.recReason, tc.stall, tc.stallReason)
			}
		})
	}
}
