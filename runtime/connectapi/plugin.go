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

package connectapi

import "github.com/conveyor-dev/conveyor/runtime/plugin"

// This file converts the plugin API's self-description into REST entities,
// so that a herder answers /connector-plugins, .../config,
// .../config/validate and /limits without knowing the JSON shapes.

// PluginInfoOf is the /connector-plugins entry of a connector plugin.
func PluginInfoOf(p plugin.Plugin) PluginInfo {
	return PluginInfo{Class: p.Class, Type: PluginType(p.Kind), Version: p.Version}
}

// ConfigKeyInfoOf is the REST definition of one config field; order is its
// 1-based position within its group (plugin.ConfigSpec.Order).
func ConfigKeyInfoOf(f plugin.ConfigField, order int) ConfigKeyInfo {
	return ConfigKeyInfo{
		Name:          f.Name,
		Type:          string(f.Type),
		Required:      f.Required,
		DefaultValue:  f.DefaultValue(),
		Importance:    string(f.ImportanceOrDefault()),
		Documentation: f.Doc,
		Group:         f.Group,
		Width:         string(f.WidthOrDefault()),
		DisplayName:   f.DisplayNameOrDefault(),
		Dependents:    f.Dependents,
		Order:         order,
	}
}

// ConfigKeysOf is the body of GET /connector-plugins/{p}/config for a spec
// (usually plugin.Plugin.FullSpec()), in spec order.
func ConfigKeysOf(spec plugin.ConfigSpec) []ConfigKeyInfo {
	out := make([]ConfigKeyInfo, 0, len(spec.Fields))
	for _, f := range spec.Fields {
		out = append(out, ConfigKeyInfoOf(f, spec.Order(f.Name)))
	}
	return out
}

// ConfigInfosOf is the body of PUT /connector-plugins/{p}/config/validate
// for a validation result (plugin.ValidateConfig).
func ConfigInfosOf(r plugin.ValidationResult) ConfigInfos {
	out := ConfigInfos{Name: r.Name, ErrorCount: r.ErrorCount, Groups: r.Groups, Configs: make([]ConfigInfo, 0, len(r.Configs))}
	for _, c := range r.Configs {
		out.Configs = append(out.Configs, ConfigInfo{
			Definition: ConfigKeyInfoOf(c.Definition, c.Order),
			Value: ConfigValueInfo{
				Name:              c.Value.Name,
				Value:             c.Value.Value,
				RecommendedValues: c.Value.RecommendedValues,
				Errors:            c.Value.Errors,
				Visible:           c.Value.Visible,
			},
		})
	}
	return out
}

// LimitsOf is the body of GET /connectors/{c}/limits: tasksMax as the user
// wrote it, the connector's natural limit (negative, i.e. plugin.NoLimit,
// renders as null) and reason as NaturalLimit reported them, and the
// number of task configs actually in effect. The reason shown is the one
// plugin.EffectiveTasks gives: the connector's when its limit binds,
// plugin.TasksMax otherwise.
func LimitsOf(tasksMax, naturalLimit int, reason plugin.Reason, effectiveTasks int) Limits {
	l := Limits{TasksMax: tasksMax, EffectiveTasks: effectiveTasks}
	if naturalLimit >= 0 {
		n := naturalLimit
		l.NaturalLimit = &n
	}
	_, binding := plugin.EffectiveTasks(tasksMax, naturalLimit, reason)
	l.Reason = string(binding)
	return l
}
