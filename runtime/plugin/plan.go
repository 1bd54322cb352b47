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

package plugin

import (
	"context"
	"fmt"

	"github.com/conveyor-dev/conveyor/runtime/guard"
)

// Limits is what GET /connectors/{c}/limits reports: the user's tasks.max,
// the connector's natural limit ([NoLimit] when unbounded), the number of
// tasks that run and why.
type Limits struct {
	TasksMax       int
	NaturalLimit   int
	EffectiveTasks int
	Reason         Reason
}

// PlanTasks runs the connector's side of a task (re)configuration the way
// every caller should: NaturalLimit, then [EffectiveTasks], then
// TaskConfigs for that many tasks, refusing more configs than tasks.max
// (KIP-1004, [ErrTooManyTaskConfigs]). The connector must be started.
// When the connector returns fewer configs than planned, EffectiveTasks
// reports the number actually returned.
func PlanTasks(ctx context.Context, name string, c Connector, tasksMax int) ([]map[string]string, Limits, error) {
	var limit int
	var reason Reason
	err := guard.Call("natural limit", func() (err error) { limit, reason, err = c.NaturalLimit(ctx); return err })
	if err != nil {
		return nil, Limits{}, fmt.Errorf("connector %q: computing its natural task limit: %w", name, err)
	}
	if limit < 0 {
		limit = NoLimit
	}
	n, r := EffectiveTasks(tasksMax, limit, reason)
	lim := Limits{TasksMax: tasksMax, NaturalLimit: limit, EffectiveTasks: n, Reason: r}
	if n == 0 {
		return []map[string]string{}, lim, nil
	}
	var configs []map[string]string
	err = guard.Call("task configs", func() (err error) { configs, err = c.TaskConfigs(n); return err })
	if err != nil {
		return nil, lim, fmt.Errorf("connector %q: generating task configs: %w", name, err)
	}
	if err := CheckTaskConfigs(name, max(tasksMax, 1), configs); err != nil {
		return nil, lim, err
	}
	if len(configs) < n {
		lim.EffectiveTasks = len(configs)
	}
	return configs, lim, nil
}
