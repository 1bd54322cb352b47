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

package kedascale

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/autoscaling"
)

// metadataLog records the topics of every Metadata request the broker gets
// ("*" for a request of every topic).
type metadataLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *metadataLog) watch(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r, ok := req.(*kmsg.MetadataRequest)
		if !ok {
			return nil, nil, false
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if r.Topics == nil {
			l.seen = append(l.seen, "*")
			return nil, nil, false
		}
		for _, t := range r.Topics {
			if t.Topic != nil {
				l.seen = append(l.seen, *t.Topic)
			}
		}
		return nil, nil, false
	})
}

func (l *metadataLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.seen
	l.seen = nil
	return out
}

// TestDerivedTriggersAskForTheirTopicsMetadataOnly: every derived kafka
// trigger carries KEDA 2.21's fullMetadata: "false", KEDA's own scaler takes
// it, and it shows on the wire: while KEDA reads the derived ScaledObject,
// its Kafka client asks the broker for the metadata of the trigger's topic
// only, never of every topic (the broker also holds a topic no connector
// reads), and the lag is the same. The same ScaledObject with KEDA's default
// ("true") asks for every topic, which is what the setting saves KEDA from
// holding at 3,000 ScaledObjects (keda#7453).
func TestDerivedTriggersAskForTheirTopicsMetadataOnly(t *testing.T) {
	b := newBroker(t, false)
	b.topic(t, "orders", 2, 1000)
	b.topic(t, "unrelated", 4, 10)
	b.commit(t, "connect-archive", "orders", 2, 250)
	ns := namespace(t)
	so, ta, _ := derive(b.cluster(ns, 1, 10, 1000), []v1alpha1.KafkaConnector{sink(ns, "archive", 4, map[string]string{"topics": "orders"})})
	for _, tr := range so.Spec.Triggers {
		if tr.Metadata["fullMetadata"] != autoscaling.FullMetadata || autoscaling.FullMetadata != "false" {
			t.Fatalf("trigger %s has fullMetadata %q, want \"false\"", tr.Name, tr.Metadata["fullMetadata"])
		}
	}
	full := so.DeepCopy()

	var log metadataLog
	log.watch(b.fake)
	ev := evaluate(t, ns, so, ta, nil)
	asked := log.take()
	if got := ev.metrics[kedav1alpha1.CompositeMetricName]; got != 1500 {
		t.Fatalf("composite lag %v, want 1500 (metrics %v)", got, ev.metrics)
	}
	if slices.Contains(asked, "*") || !slices.Contains(asked, "orders") || slices.Contains(asked, "unrelated") {
		t.Fatalf("with fullMetadata false KEDA's client asked the broker for the metadata of %v, want only [orders]", asked)
	}
	t.Logf("fullMetadata false: KEDA asked for the metadata of %v", slices.Compact(slices.Sorted(slices.Values(asked))))

	// KEDA's default, for comparison: the same object in a fresh namespace.
	ns2 := namespace(t)
	full.Namespace, full.ResourceVersion, full.UID = ns2, "", ""
	for i := range full.Spec.Triggers {
		full.Spec.Triggers[i].Metadata["fullMetadata"] = "true"
	}
	ev = evaluate(t, ns2, full, nil, nil)
	asked = log.take()
	if got := ev.metrics[kedav1alpha1.CompositeMetricName]; got != 1500 {
		t.Fatalf("composite lag with fullMetadata true %v, want 1500", got)
	}
	if !slices.Contains(asked, "*") {
		t.Fatalf("with fullMetadata true KEDA's client asked only for %v: the comparison shows nothing", asked)
	}
	t.Logf("fullMetadata true: KEDA asked for the metadata of %s", fmt.Sprint(slices.Compact(slices.Sorted(slices.Values(asked)))))
}
