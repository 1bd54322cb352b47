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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/condition"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// ReasonApplyingOffsets: the operator is stopping the connector to apply
// spec.offsets; it comes back to spec.state once they are applied.
const ReasonApplyingOffsets = "ApplyingOffsets"

// offsetsRetry is how soon a pass waiting for the connector to stop looks
// again.
const offsetsRetry = time.Second

// createState is the initial state of a new connector: STOPPED while
// spec.offsets holds a request, so that it never runs from other offsets
// first; spec.state otherwise.
func createState(kc *v1alpha1.KafkaConnector) connectapi.InitialState {
	if kc.OffsetsPending() {
		return connectapi.InitialStopped
	}
	return InitialState(kc.TargetState())
}

// OffsetsBody turns spec.offsets into the body of PATCH
// /connectors/{c}/offsets. Numbers keep their exact digits (json.Number):
// offsets can exceed 2^53.
func OffsetsBody(req *v1alpha1.OffsetsRequest) (connectapi.ConnectorOffsets, error) {
	out := connectapi.ConnectorOffsets{Offsets: make([]connectapi.ConnectorOffset, 0, len(req.Offsets))}
	for i, o := range req.Offsets {
		p, err := plainMap(o.Partition)
		if err != nil {
			return out, fmt.Errorf("spec.offsets.offsets[%d].partition: %w", i, err)
		}
		off, err := plainMap(o.Offset)
		if err != nil {
			return out, fmt.Errorf("spec.offsets.offsets[%d].offset: %w", i, err)
		}
		out.Offsets = append(out.Offsets, connectapi.ConnectorOffset{Partition: p, Offset: off})
	}
	return out, nil
}

// CheckSinkOffsets checks a sink connector's offsets document as Kafka
// Connect would, naming the entry and key: kafka_topic a topic name,
// kafka_partition an integer >= 0, kafka_offset (when the entry has an
// offset) an integer >= 0.
func CheckSinkOffsets(body connectapi.ConnectorOffsets) error {
	for i, o := range body.Offsets {
		at := fmt.Sprintf("spec.offsets.offsets[%d]", i)
		if t, ok := o.Partition["kafka_topic"].(string); !ok || t == "" {
			return fmt.Errorf("%s.partition.kafka_topic must name the topic of a sink partition", at)
		}
		if _, ok := nonNegativeInt(o.Partition["kafka_partition"]); !ok {
			return fmt.Errorf("%s.partition.kafka_partition must be a partition number >= 0", at)
		}
		if o.Offset == nil {
			continue // resets this partition
		}
		if _, ok := nonNegativeInt(o.Offset["kafka_offset"]); !ok {
			return fmt.Errorf("%s.offset.kafka_offset must be an integer >= 0 (the offset of the next record to read); leave offset out to reset the partition", at)
		}
	}
	return nil
}

func nonNegativeInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil && i >= 0
}

func plainMap(m map[string]apiextensionsv1.JSON) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		dec := json.NewDecoder(bytes.NewReader(v.Raw))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		out[k] = x
	}
	return out, nil
}

// applyOffsets handles a pending spec.offsets request (KIP-875): it stops
// the connector, waits until the workers report it STOPPED, applies the
// offsets, records the outcome and lets convergeState bring the connector
// back to spec.state (a paused connector is paused again). Until then the
// pass stops with Ready=False, ApplyingOffsets.
func (r *Reconciler) applyOffsets(ctx context.Context, kc *v1alpha1.KafkaConnector, l *connectorLoop) error {
	if !kc.OffsetsPending() {
		return nil
	}
	// A one-shot action: confirm it against the API server's object (the
	// cache may not hold this reconciler's last status write yet).
	if live := r.live(ctx, kc); live != nil && !live.OffsetsPending() {
		return nil
	}
	req := kc.Spec.Offsets
	var body connectapi.ConnectorOffsets
	if !req.Reset {
		// A document that cannot be applied is refused before the connector
		// is stopped for it.
		var err error
		if body, err = OffsetsBody(req); err == nil && isSink(kc.Spec.Config) {
			err = CheckSinkOffsets(body)
		}
		if err != nil {
			l.offsets = offsetsOutcome(req, v1alpha1.OffsetsFailed, err.Error(), r.now())
			return nil
		}
	}
	waiting := func(format string, args ...any) {
		l.fail(ReasonApplyingOffsets, "applying spec.offsets (requestId %s): %s", req.RequestID, fmt.Sprintf(format, args...))
	}
	if l.runtime.Connector.State != connectapi.StateStopped {
		if err := l.workers.Stop(ctx, kc.Name); err != nil {
			return fmt.Errorf("stopping connector %q to apply spec.offsets: %w", kc.Name, err)
		}
		r.lastSent.Store(kc.Namespace+"/"+kc.Name, StateStop)
		waiting("stopping the connector (it is %s)", orUnknown(l.runtime.Connector.State))
		return nil
	}
	var msg connectapi.Message
	var err error
	if req.Reset {
		msg, err = l.workers.ResetOffsets(ctx, kc.Name)
	} else {
		msg, err = l.workers.AlterOffsets(ctx, kc.Name, body)
	}
	var apiErr *workerclient.APIError
	switch {
	case err == nil:
		l.offsets = offsetsOutcome(req, v1alpha1.OffsetsApplied, msg.Message, r.now())
	case errors.As(err, &apiErr) && strings.HasPrefix(apiErr.Message, "Connectors must be in the STOPPED state"):
		// The stop has not reached every task yet.
		waiting("waiting for the connector's tasks to stop")
	case apiErr != nil && (errors.Is(err, connectapi.ErrBadRequest) || workerclient.IsNotFound(err)):
		l.offsets = offsetsOutcome(req, v1alpha1.OffsetsFailed, "the workers refused spec.offsets: "+apiErr.Message, r.now())
	default:
		return fmt.Errorf("applying spec.offsets (requestId %s) to connector %q: %w", req.RequestID, kc.Name, err)
	}
	if l.offsets != nil {
		l.wakeWithin(offsetsRetry) // a connector created this pass resumes at the next
	}
	return nil
}

func offsetsOutcome(req *v1alpha1.OffsetsRequest, result v1alpha1.OffsetsResult, msg string, at time.Time) *v1alpha1.OffsetsStatus {
	return &v1alpha1.OffsetsStatus{RequestID: req.RequestID, Result: result, Time: &metav1.Time{Time: at},
		Message: condition.Truncate(msg, 1024)}
}

// offsetsStatus records a handled request in status.offsets.
func offsetsStatus(l *connectorLoop, s *v1alpha1.KafkaConnectorStatus) {
	if l.offsets != nil {
		s.Offsets = l.offsets
	}
}

// emitOffsetsEvents says what became of a handled request.
func (r *Reconciler) emitOffsetsEvents(kc *v1alpha1.KafkaConnector, l *connectorLoop) {
	o := l.offsets
	if o == nil {
		return
	}
	what := fmt.Sprintf("%d partition(s)", len(kc.Spec.Offsets.Offsets))
	if kc.Spec.Offsets.Reset {
		what = "a reset"
	}
	if o.Result == v1alpha1.OffsetsApplied {
		r.event(kc, corev1.EventTypeNormal, "OffsetsApplied", "AlterOffsets", "applied spec.offsets requestId %s (%s) to connector %s; it returns to spec.state %s", o.RequestID, what, kc.Name, kc.TargetState())
		return
	}
	r.event(kc, corev1.EventTypeWarning, "OffsetsFailed", "AlterOffsets", "spec.offsets requestId %s was not applied to connector %s: %s; it returns to spec.state %s with its old offsets", o.RequestID, kc.Name, o.Message, kc.TargetState())
}
