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
	"errors"
	"testing"
)

type planConnector struct {
	fakeConnector
	limit   int
	reason  Reason
	extra   int // configs returned beyond the max asked for
	fewer   int
	lastMax int
}

func (p *planConnector) NaturalLimit(context.Context) (int, Reason, error) {
	return p.limit, p.reason, nil
}

func (p *planConnector) TaskConfigs(max int) ([]map[string]string, error) {
	p.lastMax = max
	return make([]map[string]string, max+p.extra-p.fewer), nil
}

func TestPlanTasks(t *testing.T) {
	ctx := context.Background()
	c := &planConnector{limit: 4, reason: TopicPartitions}
	cfgs, lim, err := PlanTasks(ctx, "s", c, 10)
	if err != nil || len(cfgs) != 4 || c.lastMax != 4 || lim != (Limits{TasksMax: 10, NaturalLimit: 4, EffectiveTasks: 4, Reason: TopicPartitions}) {
		t.Fatal(len(cfgs), lim, err)
	}
	c = &planConnector{limit: NoLimit, reason: TasksMax}
	_, lim, _ = PlanTasks(ctx, "s", c, 3)
	if lim != (Limits{TasksMax: 3, NaturalLimit: NoLimit, EffectiveTasks: 3, Reason: TasksMax}) {
		t.Fatal(lim)
	}
	c = &planConnector{limit: NoLimit, extra: 1}
	if _, _, err := PlanTasks(ctx, "s", c, 3); !errors.Is(err, ErrTooManyTaskConfigs) {
		t.Fatal(err)
	}
	c = &planConnector{limit: 0, reason: Files}
	cfgs, lim, err = PlanTasks(ctx, "s", c, 3)
	if err != nil || len(cfgs) != 0 || lim.EffectiveTasks != 0 || lim.Reason != Files || c.lastMax != 0 {
		t.Fatal(cfgs, lim, err)
	}
	c = &planConnector{limit: 8, reason: Ranges, fewer: 2}
	_, lim, _ = PlanTasks(ctx, "s", c, 5)
	if lim.EffectiveTasks != 3 {
		t.Fatal(lim)
	}
}
