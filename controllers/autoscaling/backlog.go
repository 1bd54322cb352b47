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

// Backlog triggers: autoscaling on what KEDA's kafka scaler cannot read.
//
// A table source that falls behind has no consumer lag, and KEDA has no
// scaler for a share group's backlog (KIP-932). The workers know both: any
// worker answers GET /backlog/{connector} on its metrics port
// (runtime/herder/backlog.go) with the rows a table source has not copied,
// the bytes a CDC source or a file source has not read (targeted at
// lagThreshold as they are: their term is at its cap as soon as the tasks
// are about a KB behind each, docs/autoscaling.md), or the records a
// share-mode sink's share group has not delivered. Each
// such connector gets one KEDA metrics-api trigger that reads it, and a
// term in the composite capped, like a sink's, at what the connector can
// use: a source at effectiveTasks × lagThreshold, a share-mode sink at
// tasks.max × lagThreshold (its tasks share partitions: the partition
// count does not bound them).
//
// The trigger asks every ready endpoint of the workers' Service
// (aggregateFromKubeServiceEndpoints, aggregationType max), with the
// metrics token as a bearer token (the derived "<deployment>-backlog"
// TriggerAuthentication points KEDA at the metrics token Secret). Every
// worker computes the same figure from state outside itself (the source
// database, the offsets topic, Kafka's share-group offsets), so the
// maximum over the answers is that figure, and a worker that is
// restarting is simply not asked (not ready) or not heard (KEDA skips an
// endpoint that fails while another answers). See composite.go for why
// this serving path is safe where an operator-served scaler was not.

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// BacklogTriggerType is KEDA's metrics-api scaler.
const BacklogTriggerType = "metrics-api"

// BacklogPath is the workers' backlog route on the metrics port.
const BacklogPath = "/backlog/"

// BacklogTriggerAuthenticationName is the TriggerAuthentication that hands
// KEDA the metrics token.
func (t Target) BacklogTriggerAuthenticationName() string { return t.DeploymentName + "-backlog" }

// HasBacklogTrigger reports whether a connector gets a backlog trigger: it
// is running with tasks and its workers serve a figure for it (a share-mode
// sink always does). The cluster must serve metrics (the figure is on the
// metrics port).
func HasBacklogTrigger(cc *v1alpha1.ConnectCluster, c Connector) bool {
	if !cc.MetricsEnabled() || !c.Running || backlogCapTasks(c) <= 0 {
		return false
	}
	if c.Sink {
		return c.ShareMode
	}
	return c.BacklogUnit != ""
}

// backlogCapTasks is how many tasks the connector can use: tasks.max for a
// share-mode sink, effectiveTasks for a source.
func backlogCapTasks(c Connector) int32 {
	if c.Sink {
		if c.ShareMode && c.EffectiveTasks > 0 {
			return c.TasksMax
		}
		return 0
	}
	return c.EffectiveTasks
}

// backlogURL is the URL KEDA reads a connector's backlog at: the workers'
// Service by name (KEDA lists its EndpointSlices and asks each ready
// endpoint), the metrics port, the connector's name path-escaped.
func backlogURL(cc *v1alpha1.ConnectCluster, t Target, connector string) string {
	return fmt.Sprintf("http://%s.%s.svc:%d%s%s", t.ServiceName, cc.Namespace, cc.MetricsPort(), BacklogPath, url.PathEscape(connector))
}

// backlogTriggers returns the metrics-api triggers of the connectors with
// a backlog figure, in cs's order, and their terms of the composite.
func backlogTriggers(cc *v1alpha1.ConnectCluster, cs []Connector, t Target, names triggerNames) ([]kedav1alpha1.ScaleTriggers, []sinkTerm) {
	lag, act := thresholds(cc)
	var auth *kedav1alpha1.AuthenticationRef
	if cc.MetricsAuthenticationEnabled() {
		auth = &kedav1alpha1.AuthenticationRef{Name: t.BacklogTriggerAuthenticationName(), Kind: "TriggerAuthentication"}
	}
	var out []kedav1alpha1.ScaleTriggers
	var terms []sinkTerm
	for _, c := range cs {
		if !HasBacklogTrigger(cc, c) {
			continue
		}
		md := map[string]string{
			"url":                               backlogURL(cc, t, c.Name),
			"format":                            "json",
			"valueLocation":                     "backlog",
			"targetValue":                       strconv.FormatInt(lag, 10),
			"activationTargetValue":             strconv.FormatInt(act, 10),
			"aggregateFromKubeServiceEndpoints": "true",
			"aggregationType":                   "max",
		}
		if auth != nil {
			md["authModes"] = "bearer"
		}
		name := names.nextBacklog(c.Name)
		out = append(out, kedav1alpha1.ScaleTriggers{Type: BacklogTriggerType, Name: name, Metadata: md, AuthenticationRef: auth})
		terms = append(terms, sinkTerm{triggers: []string{name}, capLag: saturatingMul(int64(backlogCapTasks(c)), lag)})
	}
	return out, terms
}

// BuildBacklogTriggerAuthentication returns the TriggerAuthentication that
// hands KEDA the metrics token (by reference to its Secret, as KEDA's
// "token" parameter of bearer authentication), or nil when metrics need no
// token or no backlog trigger uses it.
func BuildBacklogTriggerAuthentication(cc *v1alpha1.ConnectCluster, so *kedav1alpha1.ScaledObject, t Target) *kedav1alpha1.TriggerAuthentication {
	if so == nil || !cc.MetricsAuthenticationEnabled() {
		return nil
	}
	used := false
	for _, tr := range so.Spec.Triggers {
		used = used || tr.Type == BacklogTriggerType
	}
	if !used {
		return nil
	}
	ref := cc.MetricsTokenSecret()
	return &kedav1alpha1.TriggerAuthentication{
		TypeMeta: metav1.TypeMeta{APIVersion: kedav1alpha1.SchemeGroupVersion.String(), Kind: "TriggerAuthentication"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      t.BacklogTriggerAuthenticationName(),
			Namespace: cc.Namespace,
			Labels:    copyLabels(t.Labels),
		},
		Spec: kedav1alpha1.TriggerAuthenticationSpec{SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{{Parameter: "token", Name: ref.Name, Key: ref.Key}}},
	}
}

// backlogConnector is the connector a backlog trigger reads, from its URL.
func backlogConnector(tr kedav1alpha1.ScaleTriggers) string {
	u, err := url.Parse(tr.Metadata["url"])
	if err != nil {
		return ""
	}
	i := strings.LastIndex(u.Path, BacklogPath)
	if i < 0 {
		return ""
	}
	return u.Path[i+len(BacklogPath):]
}
