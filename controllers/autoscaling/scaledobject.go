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
	"sort"
	"strconv"
	"strings"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Connector is what autoscaling needs to know about one KafkaConnector.
type Connector struct {
	// Name is the connector's name; a sink consumes as group "connect-<name>".
	Name string
	// Sink: the connector reads Kafka topics (its config has topics or topics.regex).
	Sink bool
	// Running: the user wants it running and the worker reports RUNNING.
	Running bool
	// Topics are the topics a sink reads, sorted: its topics list, or, for a
	// topics.regex sink, the topics the regex resolves to (ResolveRegexTopics,
	// from the broker's topic list; until then the topics the worker reports
	// in status.topics). A regex sink with no resolved topic gets no trigger:
	// KEDA's kafka trigger without a topic reads whatever the group has
	// committed, which is every topic or only some (see composite.go).
	Topics []string
	// TopicsRegex is a sink's topics.regex; empty for a topics list.
	TopicsRegex string
	// EffectiveTasks is status.effectiveTasks; 0 for a stopped connector.
	EffectiveTasks int32
	// ShareMode: a sink that consumes through a share group
	// (consumer.group.type=share), whose backlog the workers serve
	// (backlog.go); it gets no kafka trigger.
	ShareMode bool
	// TasksMax is spec.tasksMax: a share-mode sink's cap (its tasks share
	// partitions, so the partition count does not bound them).
	TasksMax int32
	// BacklogUnit is status.backlogUnit: the workers serve a backlog figure
	// for the connector (a table source's rows, a CDC slot's or a file
	// source's bytes, a share group's records).
	BacklogUnit string
}

// ConnectorsFrom turns the cluster's KafkaConnectors into autoscaling
// inputs, sorted by name. A stopped connector holds no tasks.
func ConnectorsFrom(kcs []v1alpha1.KafkaConnector) []Connector {
	out := make([]Connector, 0, len(kcs))
	for i := range kcs {
		kc := &kcs[i]
		_, hasTopics := kc.Spec.Config[plugin.KeyTopics]
		regex := strings.TrimSpace(kc.Spec.Config[plugin.KeyTopicsRegex])
		c := Connector{
			Name:           kc.Name,
			Sink:           hasTopics || regex != "",
			Running:        kc.TargetState() == v1alpha1.ConnectorTargetRunning && kc.Status.State == v1alpha1.ConnectorStateRunning,
			EffectiveTasks: kc.Status.EffectiveTasks,
			TasksMax:       kc.RequestedTasksMax(),
			BacklogUnit:    kc.Status.BacklogUnit,
		}
		c.ShareMode = c.Sink && plugin.ShareMode(kc.Spec.Config)
		switch {
		case hasTopics:
			c.Topics = splitTopics(kc.Spec.Config[plugin.KeyTopics])
		case regex != "":
			c.TopicsRegex = regex
			c.Topics = splitTopics(strings.Join(kc.Status.Topics, ","))
		}
		if kc.TargetState() == v1alpha1.ConnectorTargetStopped {
			c.EffectiveTasks, c.TasksMax = 0, 0
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NeedsTopicList reports whether a running sink subscribes by topics.regex,
// so its topics must be resolved from the broker's topic list.
func NeedsTopicList(cs []Connector) bool {
	for _, c := range cs {
		if c.Sink && c.Running && c.TopicsRegex != "" {
			return true
		}
	}
	return false
}

// ResolveRegexTopics returns cs with every topics.regex sink's Topics set to
// the topics of all (the broker's topic names) that its regex matches, as the
// sink's own consumer subscribes (plugin.MatchTopics). A regex that does not
// compile keeps the topics it had (the connector's validation reports it).
func ResolveRegexTopics(cs []Connector, all []string) []Connector {
	out := append([]Connector(nil), cs...)
	for i := range out {
		if out[i].TopicsRegex == "" {
			continue
		}
		if topics, err := plugin.MatchTopics(out[i].TopicsRegex, all); err == nil {
			out[i].Topics = topics
		}
	}
	return out
}

// TotalEffectiveTasks sums the connectors' effective tasks.
func TotalEffectiveTasks(cs []Connector) int32 {
	var n int64
	for _, c := range cs {
		n += int64(max(c.EffectiveTasks, 0))
	}
	return clampInt32(n)
}

func splitTopics(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range plugin.SplitList(s) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// Target names the objects the ScaledObject relates to; the ConnectCluster
// reconciler owns those names.
type Target struct {
	// DeploymentName is the worker Deployment the ScaledObject scales; the
	// ScaledObject takes the same name.
	DeploymentName string
	// ServiceName is the Service in front of the workers, whose endpoints
	// KEDA asks for backlog figures (backlog.go).
	ServiceName string
	// Labels go on the ScaledObject and the TriggerAuthentication.
	Labels map[string]string
}

// TriggerAuthenticationName is the name of the derived TriggerAuthentication.
func (t Target) TriggerAuthenticationName() string { return t.DeploymentName + "-kafka" }

// Totals are the cluster-wide figures the bounds need.
type Totals struct {
	// EffectiveTasks sums the effective tasks of all the cluster's
	// connectors (sources too: they occupy workers).
	EffectiveTasks int32
}

// Sink consumer groups are "connect-<connector>", as in Kafka Connect.
const sinkGroupPrefix = v1alpha1.SinkGroupPrefix

// Trigger metadata keys of KEDA's kafka scaler.
const (
	TriggerType = "kafka"
	// OffsetResetPolicy matches Kafka Connect sinks (auto.offset.reset=earliest),
	// so a new sink's backlog counts as lag.
	OffsetResetPolicy = "earliest"
	// FullMetadata is the kafka trigger's fullMetadata (KEDA 2.21, default
	// "true"): "false" makes KEDA's Kafka client fetch the metadata of the
	// trigger's own topic only, never of every topic on the brokers (KEDA
	// measured about 97% less operator memory at 3,000 kafka ScaledObjects,
	// keda#7453). KEDA refuses it on a trigger without a topic, and every
	// derived trigger names its topic. KEDA before 2.21 does not read the key.
	FullMetadata = "false"
)

// triggerMetadata is the metadata every kafka trigger of the cluster shares.
func triggerMetadata(cc *v1alpha1.ConnectCluster) map[string]string {
	lag, act := thresholds(cc)
	md := map[string]string{
		"bootstrapServers":       cc.Spec.Kafka.BootstrapServers,
		"lagThreshold":           strconv.FormatInt(lag, 10),
		"activationLagThreshold": strconv.FormatInt(act, 10),
		"offsetResetPolicy":      OffsetResetPolicy,
		"fullMetadata":           FullMetadata,
	}
	if tls := cc.Spec.Kafka.TLS; tls != nil {
		md["tls"] = "enable"
		if tls.InsecureSkipVerify {
			md["unsafeSsl"] = "true"
		}
	}
	if sasl := cc.Spec.Kafka.SASL; sasl != nil {
		md["sasl"] = kedaSASL(sasl.Mechanism)
	}
	return md
}

// thresholds are autoscaling.lagThreshold and activationLagThreshold, with
// the API defaults.
func thresholds(cc *v1alpha1.ConnectCluster) (lag, activation int64) {
	lag, activation = v1alpha1.DefaultLagThreshold, v1alpha1.DefaultActivationLagThreshold
	if as := cc.Spec.Autoscaling; as != nil {
		if as.LagThreshold != nil {
			lag = *as.LagThreshold
		}
		if as.ActivationLagThreshold != nil {
			activation = *as.ActivationLagThreshold
		}
	}
	return lag, activation
}

// Triggers returns one kafka trigger per topic of every running sink that
// runs tasks, in a stable order (connectors by name, topics sorted), then
// one metrics-api trigger per connector whose backlog the workers serve
// (backlog.go), and the composite formula over them. KEDA's kafka scaler reads one topic per
// trigger; a sink without a resolved topic gets none (see composite.go).
func Triggers(cc *v1alpha1.ConnectCluster, connectors []Connector, t Target) ([]kedav1alpha1.ScaleTriggers, string) {
	var auth *kedav1alpha1.AuthenticationRef
	if NeedsTriggerAuthentication(cc) {
		auth = &kedav1alpha1.AuthenticationRef{Name: t.TriggerAuthenticationName(), Kind: "TriggerAuthentication"}
	}
	base := triggerMetadata(cc)
	lag, _ := thresholds(cc)
	sorted := append([]Connector(nil), connectors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	names := triggerNames{}
	var out []kedav1alpha1.ScaleTriggers
	var terms []sinkTerm
	for _, c := range sorted {
		if !c.Sink || c.ShareMode || !c.Running || c.EffectiveTasks <= 0 || len(c.Topics) == 0 {
			continue
		}
		term := sinkTerm{capLag: saturatingMul(int64(c.EffectiveTasks), lag)}
		for _, topic := range c.Topics {
			md := make(map[string]string, len(base)+2)
			for k, v := range base {
				md[k] = v
			}
			md["consumerGroup"] = sinkGroupPrefix + c.Name
			md["topic"] = topic
			name := names.next(c.Name, topic)
			term.triggers = append(term.triggers, name)
			out = append(out, kedav1alpha1.ScaleTriggers{
				Type:              TriggerType,
				Name:              name,
				Metadata:          md,
				AuthenticationRef: auth,
			})
		}
		terms = append(terms, term)
	}
	bt, bterms := backlogTriggers(cc, sorted, t, names)
	return append(out, bt...), formula(append(terms, bterms...))
}

func kedaSASL(m v1alpha1.SASLMechanism) string {
	switch m {
	case v1alpha1.SASLMechanismScramSHA256:
		return "scram_sha256"
	case v1alpha1.SASLMechanismScramSHA512:
		return "scram_sha512"
	default:
		return "plaintext"
	}
}

// maxStabilizationWindow is the longest scale-down stabilization window the HPA accepts.
const maxStabilizationWindow = 3600

// seconds renders a duration in whole seconds, at least 0.
func seconds(d *metav1.Duration, def time.Duration) *int32 {
	v := def
	if d != nil {
		v = d.Duration
	}
	return ptr.To(clampInt32(int64(v / time.Second)))
}

// Features are what the installed KEDA offers beyond v2.0's ScaledObject.
type Features struct {
	// ScalingModifiers: the ScaledObject CRD has spec.advanced.scalingModifiers
	// (KEDA 2.12 and later), so the triggers can be summed into one metric.
	ScalingModifiers bool
	// ScalingModifiersFallback: spec.fallback.behavior accepts
	// scalingModifiers (KEDA 2.20 and later), so a trigger that keeps
	// failing counts as 0 in the composite instead of failing it
	// (composite.go).
	ScalingModifiersFallback bool
}

// BuildScaledObject is BuildScaledObjectFor with a KEDA that has
// scalingModifiers and their fallback (KEDA 2.20 and later).
func BuildScaledObject(cc *v1alpha1.ConnectCluster, connectors []Connector, totals Totals, t Target) (*kedav1alpha1.ScaledObject, Decision) {
	return BuildScaledObjectFor(cc, connectors, totals, t, Features{ScalingModifiers: true, ScalingModifiersFallback: true})
}

// BuildScaledObjectFor returns the cluster's ScaledObject, or nil when no
// running sink gives it a trigger (KEDA refuses a ScaledObject without
// triggers; the Deployment then runs the decision's Min workers). With
// scalingModifiers its one metric is the composite lag (composite.go);
// without, the HPA takes the largest trigger, which under-scales spread lag,
// and the Autoscaling condition says so. The caller sets the owner reference
// to the ConnectCluster and applies it.
func BuildScaledObjectFor(cc *v1alpha1.ConnectCluster, connectors []Connector, totals Totals, t Target, f Features) (*kedav1alpha1.ScaledObject, Decision) {
	d := AutoscalingDecision(BoundsInputFor(cc, totals.EffectiveTasks))
	triggers, formula := Triggers(cc, connectors, t)
	if len(triggers) == 0 {
		return nil, d
	}
	as := cc.Spec.Autoscaling
	var polling, cooldown *metav1.Duration
	if as != nil {
		polling, cooldown = as.PollingInterval, as.CooldownPeriod
	}
	so := &kedav1alpha1.ScaledObject{
		TypeMeta: metav1.TypeMeta{APIVersion: kedav1alpha1.SchemeGroupVersion.String(), Kind: "ScaledObject"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        t.DeploymentName,
			Namespace:   cc.Namespace,
			Labels:      copyLabels(t.Labels),
			Annotations: ScaledObjectAnnotations(cc),
		},
		Spec: kedav1alpha1.ScaledObjectSpec{
			ScaleTargetRef: &kedav1alpha1.ScaleTarget{
				APIVersion: "apps/v1",
				Kind:       "Deployment",
				Name:       t.DeploymentName,
			},
			PollingInterval: seconds(polling, v1alpha1.DefaultPollingInterval),
			CooldownPeriod:  seconds(cooldown, v1alpha1.DefaultCooldownPeriod),
			MinReplicaCount: ptr.To(d.Min),
			MaxReplicaCount: ptr.To(d.Max),
			Triggers:        triggers,
		},
	}
	// KEDA's cooldownPeriod only delays a scale to zero, and minReplicas is at least 1: the
	// HPA's scale-down stabilization window is what waits out the cooldown before it scales
	// down (it takes the largest replica count recommended within the window; the HPA
	// allows at most an hour).
	so.Spec.Advanced = &kedav1alpha1.AdvancedConfig{HorizontalPodAutoscalerConfig: &kedav1alpha1.HorizontalPodAutoscalerConfig{
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To(min(*so.Spec.CooldownPeriod, maxStabilizationWindow)),
		}},
	}}
	if f.ScalingModifiers {
		lag, act := thresholds(cc)
		so.Spec.Advanced.ScalingModifiers = kedav1alpha1.ScalingModifiers{
			Formula:          formula,
			Target:           strconv.FormatInt(lag, 10),
			ActivationTarget: strconv.FormatInt(act, 10),
			MetricType:       autoscalingv2.AverageValueMetricType,
		}
		if f.ScalingModifiersFallback {
			so.Spec.Fallback = &kedav1alpha1.Fallback{
				FailureThreshold: FallbackFailureThreshold,
				Replicas:         d.Min,
				Behavior:         kedav1alpha1.FallbackBehaviorScalingModifiers,
			}
		}
	}
	return so, d
}

// NeedsTriggerAuthentication reports whether the cluster's Kafka needs
// credentials from Secrets (client TLS material or SASL).
func NeedsTriggerAuthentication(cc *v1alpha1.ConnectCluster) bool {
	k := cc.Spec.Kafka
	return k.SASL != nil || (k.TLS != nil && (k.TLS.CA != nil || k.TLS.Certificate != nil || k.TLS.Key != nil))
}

// BuildTriggerAuthentication returns the TriggerAuthentication that hands
// KEDA the cluster's Kafka TLS and SASL Secrets (by reference: no value is
// copied), or nil when the cluster's Kafka needs none.
func BuildTriggerAuthentication(cc *v1alpha1.ConnectCluster, t Target) *kedav1alpha1.TriggerAuthentication {
	if !NeedsTriggerAuthentication(cc) {
		return nil
	}
	var refs []kedav1alpha1.AuthSecretTargetRef
	add := func(param string, r *v1alpha1.SecretKeyRef) {
		if r != nil {
			refs = append(refs, kedav1alpha1.AuthSecretTargetRef{Parameter: param, Name: r.Name, Key: r.Key})
		}
	}
	if tls := cc.Spec.Kafka.TLS; tls != nil {
		add("ca", tls.CA)
		add("cert", tls.Certificate)
		add("key", tls.Key)
	}
	if sasl := cc.Spec.Kafka.SASL; sasl != nil {
		add("username", &sasl.Username)
		add("password", &sasl.Password)
	}
	return &kedav1alpha1.TriggerAuthentication{
		TypeMeta: metav1.TypeMeta{APIVersion: kedav1alpha1.SchemeGroupVersion.String(), Kind: "TriggerAuthentication"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      t.TriggerAuthenticationName(),
			Namespace: cc.Namespace,
			Labels:    copyLabels(t.Labels),
		},
		Spec: kedav1alpha1.TriggerAuthenticationSpec{SecretTargetRef: refs},
	}
}

func copyLabels(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
