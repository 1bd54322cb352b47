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

package autoscaling

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// Resources of KEDA's API group the operator writes.
const (
	resourceScaledObjects          = "scaledobjects"
	resourceTriggerAuthentications = "triggerauthentications"
)

// ScaledObjectServed asks the API server's discovery whether KEDA's
// keda.sh/v1alpha1 ScaledObject and TriggerAuthentication resources are
// served. A group that is not there is (false, nil); other failures are
// errors, so a flaky API server is not mistaken for "KEDA not installed".
func ScaledObjectServed(dc discovery.ServerResourcesInterface) (bool, error) {
	return ResourcesServed(dc, kedav1alpha1.SchemeGroupVersion.String(), resourceScaledObjects, resourceTriggerAuthentications)
}

// ResourcesServed asks discovery whether every one of resources is served
// in groupVersion: the check of any optional CRD (KEDA's, the
// prometheus-operator PodMonitor). A group that is not there is
// (false, nil); other failures are errors.
func ResourcesServed(dc discovery.ServerResourcesInterface, groupVersion string, resources ...string) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		if apierrors.IsNotFound(err) || discovery.IsGroupDiscoveryFailedError(err) {
			return false, nil
		}
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	names := make([]string, 0, len(list.APIResources))
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	for _, want := range resources {
		if !slices.Contains(names, want) {
			return false, nil
		}
	}
	return true, nil
}

// IsScaledObjectServed is ScaledObjectServed with errors counted as "not
// served" (the caller re-checks periodically anyway).
func IsScaledObjectServed(dc discovery.ServerResourcesInterface) bool {
	ok, err := ScaledObjectServed(dc)
	return ok && err == nil
}

// scaledObjectKind is the kind whose schema ScalingModifiersServed reads.
const scaledObjectKind = "ScaledObject"

// ScalingModifiersServed reads the ScaledObject schema that the API server
// publishes (OpenAPI v3 discovery, which every authenticated client may
// read, so the operator needs no access to CRDs) and reports whether it has
// spec.advanced.scalingModifiers.formula: KEDA 2.12 and later. A schema
// that does not list KEDA's group is (false, nil).
func ScalingModifiersServed(oa openapi.Client) (bool, error) {
	f, err := ScaledObjectFeatures(oa)
	return f.ScalingModifiers, err
}

// ScaledObjectFeatures reads the published ScaledObject schema as
// ScalingModifiersServed does, and also whether spec.fallback.behavior
// accepts scalingModifiers (KEDA 2.20 and later).
func ScaledObjectFeatures(oa openapi.Client) (Features, error) {
	paths, err := oa.Paths()
	if err != nil {
		return Features{}, fmt.Errorf("listing the OpenAPI v3 schemas: %w", err)
	}
	gv, ok := paths["apis/"+kedav1alpha1.SchemeGroupVersion.String()]
	if !ok {
		return Features{}, nil
	}
	raw, err := gv.Schema("application/json")
	if err != nil {
		return Features{}, fmt.Errorf("reading the OpenAPI v3 schema of %s: %w", kedav1alpha1.SchemeGroupVersion, err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Features{}, fmt.Errorf("decoding the OpenAPI v3 schema of %s: %w", kedav1alpha1.SchemeGroupVersion, err)
	}
	all := doc.Components.Schemas
	for _, sch := range all {
		if !schemaIsKind(sch, scaledObjectKind) {
			continue
		}
		f := Features{ScalingModifiers: schemaHas(all, sch, "spec", "advanced", "scalingModifiers", "formula")}
		if behavior := schemaAt(all, sch, "spec", "fallback", "behavior"); behavior != nil {
			enum, _ := deref(all, behavior)["enum"].([]any)
			f.ScalingModifiersFallback = f.ScalingModifiers && slices.Contains(enum, any(kedav1alpha1.FallbackBehaviorScalingModifiers))
		}
		return f, nil
	}
	return Features{}, nil
}

// schemaIsKind reports whether an OpenAPI schema is the given kind of KEDA's
// group (x-kubernetes-group-version-kind).
func schemaIsKind(sch map[string]any, kind string) bool {
	gvks, _ := sch["x-kubernetes-group-version-kind"].([]any)
	for _, g := range gvks {
		m, _ := g.(map[string]any)
		if m["group"] == kedav1alpha1.SchemeGroupVersion.Group && m["kind"] == kind {
			return true
		}
	}
	return false
}

// schemaHas follows properties (and $ref or allOf to other component
// schemas) along path.
func schemaHas(all map[string]map[string]any, sch map[string]any, path ...string) bool {
	return schemaAt(all, sch, path...) != nil
}

// schemaAt is the schema at path, as schemaHas follows it; nil when absent.
func schemaAt(all map[string]map[string]any, sch map[string]any, path ...string) map[string]any {
	for _, p := range path {
		sch = deref(all, sch)
		props, _ := sch["properties"].(map[string]any)
		next, ok := props[p].(map[string]any)
		if !ok {
			return nil
		}
		sch = next
	}
	return sch
}

func deref(all map[string]map[string]any, sch map[string]any) map[string]any {
	for range 8 {
		ref, _ := sch["$ref"].(string)
		if ref == "" {
			if allOf, _ := sch["allOf"].([]any); len(allOf) == 1 {
				if m, ok := allOf[0].(map[string]any); ok {
					sch = m
					continue
				}
			}
			return sch
		}
		target, ok := all[strings.TrimPrefix(ref, "#/components/schemas/")]
		if !ok {
			return sch
		}
		sch = target
	}
	return sch
}

// KEDAChecker re-checks through discovery, every Interval, whether KEDA is
// installed, so that KEDA installed (or removed) after the operator started
// is picked up without a restart. It is a manager Runnable (add it with
// mgr.Add); OnChange runs when the answer changes, e.g. to enqueue every
// ConnectCluster with autoscaling enabled. With Probe set it checks another
// optional CRD the same way (controllers.Setup uses one for the PodMonitor).
type KEDAChecker struct {
	Discovery discovery.ServerResourcesInterface
	// Probe asks discovery whether the CRD is served; nil means
	// ScaledObjectServed.
	Probe func(discovery.ServerResourcesInterface) (bool, error)
	// OpenAPI, when set, is asked whether the installed ScaledObject CRD
	// has scalingModifiers (ScalingModifiersServed); without it the CRD is
	// taken to have them.
	OpenAPI  openapi.Client
	Interval time.Duration
	OnChange func(served bool)

	mu         sync.Mutex
	served     bool
	noModifs   bool
	noFallback bool // no fallback behavior scalingModifiers
	checked    bool
	lastErr    error
}

// Served returns the last answer (false before the first check).
func (k *KEDAChecker) Served() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.served
}

// ScalingModifiers returns whether the installed ScaledObject CRD has
// spec.advanced.scalingModifiers (true until a check says otherwise).
func (k *KEDAChecker) ScalingModifiers() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.noModifs
}

// ScalingModifiersFallback returns whether the installed ScaledObject CRD's
// spec.fallback.behavior accepts scalingModifiers (true until a check says
// otherwise).
func (k *KEDAChecker) ScalingModifiersFallback() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.noFallback
}

// Check asks discovery now and records the answer; on an error the previous
// answer stands.
func (k *KEDAChecker) Check() (bool, error) {
	probe := k.Probe
	if probe == nil {
		probe = ScaledObjectServed
	}
	served, err := probe(k.Discovery)
	noModifs, noFallback := false, false
	if err == nil && served && k.OpenAPI != nil {
		var f Features
		if f, err = ScaledObjectFeatures(k.OpenAPI); err == nil {
			noModifs, noFallback = !f.ScalingModifiers, !f.ScalingModifiersFallback
		}
	}
	k.mu.Lock()
	k.lastErr = err
	if err != nil {
		served = k.served
		k.mu.Unlock()
		return served, err
	}
	changed := !k.checked || served != k.served || noModifs != k.noModifs || noFallback != k.noFallback
	k.served, k.noModifs, k.noFallback, k.checked = served, noModifs, noFallback, true
	k.mu.Unlock()
	if changed && k.OnChange != nil {
		k.OnChange(served)
	}
	return served, nil
}

// Start checks at once and then every Interval (default 30s) until ctx ends.
func (k *KEDAChecker) Start(ctx context.Context) error {
	interval := k.Interval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	_, _ = k.Check()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_, _ = k.Check()
		}
	}
}

// ConditionInput is what the Autoscaling condition depends on.
type ConditionInput struct {
	// Enabled is autoscaling.enabled.
	Enabled bool
	// KEDAServed: KEDA's ScaledObject CRD is installed.
	KEDAServed bool
	// Triggers is the number of triggers the ScaledObject has (0: none built).
	Triggers int
	// ScaledObjectReady is KEDA's Ready condition of the existing
	// ScaledObject; nil while KEDA has not reported on it yet.
	ScaledObjectReady *metav1.Condition
	// WithoutScalingModifiers: the installed CRD has no scalingModifiers, so
	// the ScaledObject has one metric per trigger instead of the composite.
	WithoutScalingModifiers bool
	// Unreadable are the triggers KEDA failed to read on its last tries
	// (UnreadableTriggers).
	Unreadable []UnreadableTrigger
	// Annotations are the ConnectCluster's annotations: the message says
	// which KEDA annotations went to the ScaledObject (annotations.go).
	Annotations map[string]string
}

// AutoscalingCondition is the ConnectCluster's Autoscaling condition:
// False/AutoscalingDisabled, False/KEDANotInstalled (the cluster runs
// spec.replicas raised to the task floor; nothing else breaks),
// False/NoSinkConnectors (no ScaledObject: the Deployment runs the bounds'
// minimum), then True/ScaledObjectReady or False/ScaledObjectNotReady as
// KEDA reports.
func AutoscalingCondition(in ConditionInput, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConnectClusterAutoscaling, Status: metav1.ConditionFalse, ObservedGeneration: generation}
	switch {
	case !in.Enabled:
		c.Reason, c.Message = v1alpha1.ReasonAutoscalingDisabled, "autoscaling.enabled is false; the cluster runs spec.replicas workers"
	case !in.KEDAServed:
		c.Reason = v1alpha1.ReasonKEDANotInstalled
		c.Message = "autoscaling.enabled is true but KEDA is not installed (no keda.sh/v1alpha1 ScaledObject and TriggerAuthentication resources); the cluster runs spec.replicas workers until KEDA is installed, which the operator notices on its own"
	case in.Triggers == 0:
		c.Reason = v1alpha1.ReasonNoSinkConnectors
		c.Message = "no running sink connector gives the autoscaler a trigger; the cluster runs the autoscaling minimum"
	case len(in.Unreadable) > 0 && (in.ScaledObjectReady == nil || in.ScaledObjectReady.Status == metav1.ConditionTrue):
		// KEDA reports Ready=Unknown (PartialTriggerError) while a trigger fails and
		// the fallback has not taken over yet: the workers still scale.
		c.Status = metav1.ConditionTrue
		c.Reason = v1alpha1.ReasonTriggersUnreadable
		names := make([]string, len(in.Unreadable))
		for i, u := range in.Unreadable {
			names[i] = u.String()
		}
		c.Message = fmt.Sprintf("KEDA cannot read %d of %d trigger(s): %s. After %d failed reads in a row a trigger counts as no lag, so the other sinks still scale the workers; check that the topic exists and that KEDA's Kafka principal may describe the topic and the connector's group",
			len(in.Unreadable), in.Triggers, strings.Join(names, "; "), FallbackFailureThreshold)
	case in.ScaledObjectReady == nil:
		c.Reason, c.Message = v1alpha1.ReasonScaledObjectNotReady, "waiting for KEDA to report on the ScaledObject"
	case in.ScaledObjectReady.Status == metav1.ConditionTrue && in.WithoutScalingModifiers:
		c.Status = metav1.ConditionTrue
		c.Reason = v1alpha1.ReasonKEDAWithoutScalingModifiers
		c.Message = fmt.Sprintf("KEDA scales the workers on the largest of %d trigger(s), not on their sum: the installed ScaledObject CRD has no spec.advanced.scalingModifiers (KEDA 2.12 or later), so lag spread over several topics or sinks under-scales; upgrade KEDA", in.Triggers)
	case in.ScaledObjectReady.Status == metav1.ConditionTrue:
		c.Status = metav1.ConditionTrue
		c.Reason = v1alpha1.ReasonScaledObjectReady
		c.Message = fmt.Sprintf("KEDA scales the workers on the summed lag of %d trigger(s)", in.Triggers)
	default:
		c.Reason = v1alpha1.ReasonScaledObjectNotReady
		c.Message = "KEDA reports the ScaledObject not ready"
		if m := in.ScaledObjectReady.Message; m != "" {
			c.Message += ": " + m
		}
	}
	if note := annotationNotes(in.Annotations, in.Enabled && in.KEDAServed && in.Triggers > 0); note != "" {
		c.Message += ". " + note
	}
	return c
}

// ScaledObjectReadyCondition extracts KEDA's Ready condition from a
// ScaledObject's status, as a metav1.Condition; nil when KEDA has not
// reported it.
func ScaledObjectReadyCondition(so *kedav1alpha1.ScaledObject) *metav1.Condition {
	if so == nil {
		return nil
	}
	for _, c := range so.Status.Conditions {
		if c.Type == kedav1alpha1.ConditionReady && c.Status != "" && c.Status != metav1.ConditionUnknown {
			return &metav1.Condition{Type: string(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message}
		}
	}
	return nil
}
