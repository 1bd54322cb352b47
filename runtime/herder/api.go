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

package herder

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/store"
	"github.com/conveyor-dev/conveyor/runtime/transforms"
)

// ServerInfo implements connectapi.Herder.
func (h *Herder) ServerInfo(context.Context) (connectapi.ServerInfo, error) {
	return connectapi.ServerInfo{Version: h.opts.Version, Commit: h.opts.Commit, KafkaClusterID: h.opts.KafkaClusterID}, nil
}

// Ready implements connectapi.Herder.
func (h *Herder) Ready(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return fmt.Errorf("worker is shutting down")
	case !h.ready:
		return fmt.Errorf("worker is starting: reading the config topic")
	case !h.opts.AssignAll && h.assignment.Generation == 0:
		if h.joinStatus != nil {
			return fmt.Errorf("worker is joining its group, no assignment yet: %s", h.joinStatus())
		}
		return fmt.Errorf("worker is joining its group: no assignment yet")
	}
	return nil
}

// IsLeader implements connectapi.Herder.
func (h *Herder) IsLeader() bool { return h.isLeader() }

// LeaderURL implements connectapi.Herder.
func (h *Herder) LeaderURL() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leaderURL
}

func notFound(name string) error { return connectapi.NotFoundf("Connector %s not found", name) }

func (h *Herder) config(name string) (map[string]string, error) {
	cfg, ok := h.opts.Configs.Connector(name)
	if !ok {
		return nil, notFound(name)
	}
	return cfg, nil
}

func (h *Herder) connectorType(cfg map[string]string) connectapi.ConnectorType {
	p, ok := h.opts.Plugins.Lookup(cfg[plugin.KeyConnectorClass])
	if !ok {
		return connectapi.TypeUnknown
	}
	if p.Kind == plugin.KindSink {
		return connectapi.TypeSink
	}
	return connectapi.TypeSource
}

// ListConnectors implements connectapi.Herder.
func (h *Herder) ListConnectors(context.Context) ([]string, error) {
	return h.opts.Configs.ConnectorNames(), nil
}

// ConnectorInfo implements connectapi.Herder.
func (h *Herder) ConnectorInfo(_ context.Context, name string) (connectapi.ConnectorInfo, error) {
	cfg, err := h.config(name)
	if err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	info := connectapi.ConnectorInfo{Name: name, Config: cfg, Type: h.connectorType(cfg)}
	for i := range h.opts.Configs.TaskConfigs(name) {
		info.Tasks = append(info.Tasks, connectapi.ConnectorTaskID{Connector: name, Task: i})
	}
	return info, nil
}

// ConnectorStatus implements connectapi.Herder.
func (h *Herder) ConnectorStatus(_ context.Context, name string) (connectapi.ConnectorStateInfo, error) {
	cfg, err := h.config(name)
	if err != nil {
		return connectapi.ConnectorStateInfo{}, err
	}
	out := connectapi.ConnectorStateInfo{Name: name, Type: h.connectorType(cfg)}
	if st, ok := h.opts.Statuses.Connector(name); ok {
		out.Connector = connectapi.ConnectorState{State: h.liveState(st, name, -1), WorkerID: st.WorkerID, Trace: st.Trace}
	} else {
		out.Connector = connectapi.ConnectorState{State: connectapi.StateUnassigned}
	}
	for i := range h.opts.Configs.TaskConfigs(name) {
		out.Tasks = append(out.Tasks, h.taskState(store.TaskID{Connector: name, Task: i}))
	}
	return out, nil
}

func (h *Herder) taskState(id store.TaskID) connectapi.TaskState {
	if st, ok := h.opts.Statuses.Task(id); ok {
		return h.taskStateOf(id, st)
	}
	return connectapi.TaskState{ID: id.Task, State: connectapi.StateUnassigned}
}

// ConnectorConfig implements connectapi.Herder.
func (h *Herder) ConnectorConfig(_ context.Context, name string) (map[string]string, error) {
	return h.config(name)
}

// validate checks a connector config against its plugin's spec, with
// placeholders resolved when possible (resolved values are not kept).
func (h *Herder) validate(ctx context.Context, name string, cfg map[string]string) error {
	class := cfg[plugin.KeyConnectorClass]
	if strings.TrimSpace(class) == "" {
		return connectapi.BadRequestf("Connector config %v contains no connector type", redacted(cfg))
	}
	p, ok := h.opts.Plugins.Lookup(class)
	if !ok {
		return connectapi.BadRequestf("Failed to find any class that implements Connector and which name matches %s, available connectors are: %s",
			class, strings.Join(h.pluginClasses(), ", "))
	}
	check, err := h.resolveForValidation(ctx, name, cfg)
	if err != nil {
		return connectapi.BadRequestf("%s", err)
	}
	if res := plugin.ValidateConfig(ctx, p, check, h.validateOpts()...); res.ErrorCount > 0 {
		return connectapi.BadRequestf("%s", h.scrubFor(name, invalidConfigMessage(res)))
	}
	return nil
}

// redacted shows a config's keys only (values may hold secrets).
func redacted(cfg map[string]string) string {
	return "{" + strings.Join(slices.Sorted(maps.Keys(cfg)), ", ") + "}"
}

func invalidConfigMessage(res plugin.ValidationResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", res.ErrorCount)
	for _, fe := range res.Errors() {
		b.WriteString("\n")
		b.WriteString(fe.Message)
	}
	b.WriteString("\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
	return b.String()
}

func (h *Herder) pluginClasses() []string {
	var out []string
	for _, p := range h.opts.Plugins.List() {
		out = append(out, p.Class)
	}
	return out
}

// checkLeader lets a write through on the leader outside a rebalance. A
// write that arrives during a rebalance waits up to Options.RebalanceWait
// for it to end, then answers 409 as Kafka Connect does.
func (h *Herder) checkLeader(ctx context.Context) error {
	h.mu.Lock()
	rebalancing, done := h.rebalancing, h.rebalanceEnd
	h.mu.Unlock()
	if rebalancing {
		t := time.NewTimer(h.opts.RebalanceWait)
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	h.mu.Lock()
	leader, url, rebalancing := h.leader, h.leaderURL, h.rebalancing
	h.mu.Unlock()
	if !leader {
		return &connectapi.NotLeaderError{LeaderURL: url}
	}
	if rebalancing {
		return connectapi.RebalanceInProgressf("%s", connectapi.MessageRebalance)
	}
	return nil
}

// PutTaskConfigs writes task configs a follower generated for a connector
// it runs (the leader's end of Options.ForwardTaskConfigs; REST serves it
// as the internal PUT /connectors/{c}/tasks). Only the leader writes them.
func (h *Herder) PutTaskConfigs(ctx context.Context, name string, cfgs []map[string]string) error {
	// No wait for a rebalance in progress: the follower sending them may
	// be the one the rebalance waits for (it stops revoked work while its
	// connector waits on this write).
	if !h.isLeader() {
		return &connectapi.NotLeaderError{LeaderURL: h.LeaderURL()}
	}
	if _, err := h.config(name); err != nil {
		return err
	}
	if err := h.putTaskConfigs(ctx, name, cfgs); err != nil {
		return fmt.Errorf("writing task configs of connector %s: %w", name, err)
	}
	return nil
}

// CreateConnector implements connectapi.Herder.
func (h *Herder) CreateConnector(ctx context.Context, req connectapi.CreateConnectorRequest) (connectapi.ConnectorInfo, error) {
	if err := h.checkLeader(ctx); err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	if _, ok := h.opts.Configs.Connector(req.Name); ok {
		return connectapi.ConnectorInfo{}, connectapi.AlreadyExistsf("Connector %s already exists", req.Name)
	}
	if err := h.validate(ctx, req.Name, req.Config); err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	// The target state goes first so the connector never starts in the
	// wrong state.
	st := store.TargetStarted
	switch req.InitialState {
	case connectapi.InitialPaused:
		st = store.TargetPaused
	case connectapi.InitialStopped:
		st = store.TargetStopped
	}
	if st != store.TargetStarted {
		if err := h.opts.Configs.PutTargetState(ctx, req.Name, st); err != nil {
			return connectapi.ConnectorInfo{}, fmt.Errorf("creating connector %s: %w", req.Name, err)
		}
	}
	if err := h.opts.Configs.PutConnectorConfig(ctx, req.Name, req.Config); err != nil {
		return connectapi.ConnectorInfo{}, fmt.Errorf("creating connector %s: %w", req.Name, err)
	}
	return h.ConnectorInfo(ctx, req.Name)
}

// PutConnectorConfig implements connectapi.Herder.
func (h *Herder) PutConnectorConfig(ctx context.Context, name string, cfg map[string]string) (connectapi.ConnectorInfo, bool, error) {
	if err := h.checkLeader(ctx); err != nil {
		return connectapi.ConnectorInfo{}, false, err
	}
	_, existed := h.opts.Configs.Connector(name)
	if err := h.validate(ctx, name, cfg); err != nil {
		return connectapi.ConnectorInfo{}, false, err
	}
	if err := h.opts.Configs.PutConnectorConfig(ctx, name, cfg); err != nil {
		return connectapi.ConnectorInfo{}, false, fmt.Errorf("writing config of connector %s: %w", name, err)
	}
	info, err := h.ConnectorInfo(ctx, name)
	return info, !existed, err
}

// PatchConnectorConfig implements connectapi.Herder.
func (h *Herder) PatchConnectorConfig(ctx context.Context, name string, patch connectapi.ConfigPatch) (connectapi.ConnectorInfo, error) {
	if err := h.checkLeader(ctx); err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	cfg, err := h.config(name)
	if err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	for k, v := range patch {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = *v
		}
	}
	if err := h.validate(ctx, name, cfg); err != nil {
		return connectapi.ConnectorInfo{}, err
	}
	if err := h.opts.Configs.PutConnectorConfig(ctx, name, cfg); err != nil {
		return connectapi.ConnectorInfo{}, fmt.Errorf("writing config of connector %s: %w", name, err)
	}
	return h.ConnectorInfo(ctx, name)
}

// DeleteConnector implements connectapi.Herder.
func (h *Herder) DeleteConnector(ctx context.Context, name string) error {
	if err := h.checkLeader(ctx); err != nil {
		return err
	}
	if _, err := h.config(name); err != nil {
		return err
	}
	if err := h.opts.Configs.RemoveConnector(ctx, name); err != nil {
		return fmt.Errorf("deleting connector %s: %w", name, err)
	}
	if err := h.opts.Statuses.DeleteConnector(ctx, name); err != nil {
		return fmt.Errorf("deleting status of connector %s: %w", name, err)
	}
	return nil
}

// TaskConfigs implements connectapi.Herder.
func (h *Herder) TaskConfigs(_ context.Context, name string) ([]connectapi.TaskInfo, error) {
	if _, err := h.config(name); err != nil {
		return nil, err
	}
	out := []connectapi.TaskInfo{}
	for i, c := range h.opts.Configs.TaskConfigs(name) {
		out = append(out, connectapi.TaskInfo{ID: connectapi.ConnectorTaskID{Connector: name, Task: i}, Config: c})
	}
	return out, nil
}

// TaskStatus implements connectapi.Herder.
func (h *Herder) TaskStatus(_ context.Context, id connectapi.ConnectorTaskID) (connectapi.TaskState, error) {
	if _, err := h.config(id.Connector); err != nil {
		return connectapi.TaskState{}, err
	}
	sid := store.TaskID{Connector: id.Connector, Task: id.Task}
	st, ok := h.opts.Statuses.Task(sid)
	if !ok || id.Task >= len(h.opts.Configs.TaskConfigs(id.Connector)) {
		return connectapi.TaskState{}, connectapi.NotFoundf("No status found for task %s", id)
	}
	return h.taskStateOf(sid, st), nil
}

// RestartConnector implements connectapi.Herder.
func (h *Herder) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*connectapi.ConnectorStateInfo, error) {
	if err := h.checkLeader(ctx); err != nil {
		return nil, err
	}
	status, err := h.ConnectorStatus(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := h.forgetCrash(ctx, name); err != nil {
		return nil, err
	}
	if err := h.opts.Configs.RequestRestart(ctx, name, includeTasks, onlyFailed); err != nil {
		return nil, fmt.Errorf("restarting connector %s: %w", name, err)
	}
	if !includeTasks && !onlyFailed {
		return nil, nil
	}
	if !onlyFailed || status.Connector.State == connectapi.StateFailed {
		status.Connector.State = connectapi.StateRestarting
	}
	if includeTasks {
		for i := range status.Tasks {
			if !onlyFailed || status.Tasks[i].State == connectapi.StateFailed {
				status.Tasks[i].State = connectapi.StateRestarting
			}
		}
	}
	return &status, nil
}

// RestartTask implements connectapi.Herder.
func (h *Herder) RestartTask(ctx context.Context, id connectapi.ConnectorTaskID) error {
	if err := h.checkLeader(ctx); err != nil {
		return err
	}
	if _, err := h.config(id.Connector); err != nil {
		return err
	}
	if id.Task < 0 || id.Task >= len(h.opts.Configs.TaskConfigs(id.Connector)) {
		return connectapi.NotFoundf("Task %s not found", id)
	}
	if err := h.forgetCrash(ctx, id.Connector); err != nil {
		return err
	}
	if err := h.opts.Configs.RequestTaskRestart(ctx, store.TaskID{Connector: id.Connector, Task: id.Task}); err != nil {
		return fmt.Errorf("restarting task %s: %w", id, err)
	}
	return nil
}

func (h *Herder) setTarget(ctx context.Context, name string, st store.TargetState) error {
	if err := h.checkLeader(ctx); err != nil {
		return err
	}
	if _, err := h.config(name); err != nil {
		return err
	}
	if err := h.opts.Configs.PutTargetState(ctx, name, st); err != nil {
		return fmt.Errorf("setting target state of connector %s to %s: %w", name, st, err)
	}
	return nil
}

// Pause implements connectapi.Herder.
func (h *Herder) Pause(ctx context.Context, name string) error {
	return h.setTarget(ctx, name, store.TargetPaused)
}

// Resume implements connectapi.Herder.
func (h *Herder) Resume(ctx context.Context, name string) error {
	return h.setTarget(ctx, name, store.TargetStarted)
}

// Stop implements connectapi.Herder.
func (h *Herder) Stop(ctx context.Context, name string) error {
	return h.setTarget(ctx, name, store.TargetStopped)
}

// ActiveTopics implements connectapi.Herder.
func (h *Herder) ActiveTopics(_ context.Context, name string) (connectapi.ActiveTopicsInfo, error) {
	if _, err := h.config(name); err != nil {
		return connectapi.ActiveTopicsInfo{}, err
	}
	return connectapi.ActiveTopicsInfo{Connector: name, Topics: h.opts.Statuses.Topics(name)}, nil
}

// ResetActiveTopics implements connectapi.Herder.
func (h *Herder) ResetActiveTopics(ctx context.Context, name string) error {
	if _, err := h.config(name); err != nil {
		return err
	}
	return h.opts.Statuses.ResetTopics(ctx, name)
}

// Plugins implements connectapi.Herder.
func (h *Herder) Plugins(_ context.Context, connectorsOnly bool) ([]connectapi.PluginInfo, error) {
	var out []connectapi.PluginInfo
	for _, p := range h.opts.Plugins.List() {
		t := connectapi.PluginSource
		if p.Kind == plugin.KindSink {
			t = connectapi.PluginSink
		}
		out = append(out, connectapi.PluginInfo{Class: p.Class, Type: t, Version: p.Version})
	}
	if !connectorsOnly {
		for _, c := range converter.Classes() {
			out = append(out, connectapi.PluginInfo{Class: c, Type: connectapi.PluginConverter, Version: h.opts.Version})
		}
		for _, t := range transforms.Transforms() {
			out = append(out, connectapi.PluginInfo{Class: t.Class, Type: connectapi.PluginTransformation, Version: h.opts.Version})
		}
		for _, p := range transforms.Predicates() {
			out = append(out, connectapi.PluginInfo{Class: p.Class, Type: connectapi.PluginPredicate, Version: h.opts.Version})
		}
	}
	return out, nil
}

func (h *Herder) lookupPlugin(name string) (plugin.Plugin, error) {
	p, ok := h.opts.Plugins.Lookup(name)
	if !ok {
		return plugin.Plugin{}, connectapi.NotFoundf("Unknown plugin %s.", name)
	}
	return p, nil
}

func keyInfo(f plugin.ConfigField, order int) connectapi.ConfigKeyInfo {
	k := connectapi.ConfigKeyInfo{
		Name: f.Name, Type: string(f.Type), Required: f.Required, Importance: string(f.Importance),
		Documentation: f.Doc, Group: f.Group, Width: string(f.Width), DisplayName: f.DisplayName,
		Dependents: f.Dependents, Order: order,
	}
	if !f.Required {
		d := f.Default
		k.DefaultValue = &d
	}
	return k
}

// PluginConfig implements connectapi.Herder.
func (h *Herder) PluginConfig(_ context.Context, name string) ([]connectapi.ConfigKeyInfo, error) {
	p, err := h.lookupPlugin(name)
	if err != nil {
		// Transformations, predicates and converters have their keys
		// listed too (KIP-769).
		if keys, ok := otherPluginConfig(name); ok {
			return keys, nil
		}
		return nil, err
	}
	out := []connectapi.ConfigKeyInfo{}
	for _, f := range p.Spec.Fields {
		out = append(out, keyInfo(f, p.Spec.Order(f.Name)))
	}
	return out, nil
}

// ValidateConfig implements connectapi.Herder.
func (h *Herder) ValidateConfig(ctx context.Context, name string, cfg map[string]string) (connectapi.ConfigInfos, error) {
	p, err := h.lookupPlugin(name)
	if err != nil {
		return connectapi.ConfigInfos{}, err
	}
	res := plugin.ValidateConfig(ctx, p, cfg, h.validateOpts()...)
	out := connectapi.ConfigInfos{Name: res.Name, ErrorCount: res.ErrorCount, Groups: res.Groups}
	for _, c := range res.Configs {
		out.Configs = append(out.Configs, connectapi.ConfigInfo{
			Definition: keyInfo(c.Definition, c.Order),
			Value: connectapi.ConfigValueInfo{Name: c.Value.Name, Value: c.Value.Value,
				RecommendedValues: c.Value.RecommendedValues, Errors: c.Value.Errors, Visible: c.Value.Visible},
		})
	}
	return out, nil
}

// Limits implements connectapi.Herder.
func (h *Herder) Limits(_ context.Context, name string) (connectapi.Limits, error) {
	cfg, err := h.config(name)
	if err != nil {
		return connectapi.Limits{}, err
	}
	if l, ok := h.opts.Statuses.Limits(name); ok {
		return connectapi.Limits{TasksMax: l.TasksMax, NaturalLimit: l.NaturalLimit, EffectiveTasks: l.EffectiveTasks, Reason: l.Reason, BacklogUnit: h.backlogUnit(cfg)}, nil
	}
	// Not computed yet (the connector has not started): what is known.
	return connectapi.Limits{TasksMax: tasksMax(cfg), EffectiveTasks: len(h.opts.Configs.TaskConfigs(name)), BacklogUnit: h.backlogUnit(cfg)}, nil
}

// otherPluginConfig lists the configuration keys of a transformation,
// predicate or converter named by class or alias, in the shape keyInfo
// gives connector keys.
func otherPluginConfig(name string) ([]connectapi.ConfigKeyInfo, bool) {
	var fields []plugin.ConfigField
	if opts, ok := transforms.OptionsOf(name); ok {
		for _, o := range opts {
			fields = append(fields, plugin.ConfigField{Name: o.Name, Type: plugin.FieldType(o.OptionType()),
				Default: o.Default, Required: o.Required, Doc: o.Doc})
		}
	} else if cks, err := converter.ConfigKeys(name); err == nil {
		for _, c := range cks {
			fields = append(fields, plugin.ConfigField{Name: c.Name, Type: plugin.FieldType(c.Type), Default: c.Default, Doc: c.Doc})
		}
	} else {
		return nil, false
	}
	out := make([]connectapi.ConfigKeyInfo, 0, len(fields))
	for i, f := range fields {
		f.Importance, f.Width, f.DisplayName, f.Dependents = plugin.ImportanceMedium, plugin.WidthNone, f.Name, []string{}
		out = append(out, keyInfo(f, i+1))
	}
	return out, true
}
