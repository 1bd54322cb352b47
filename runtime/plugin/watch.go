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
	"time"
)

// WatchSinkPartitions checks a sink's natural limit (the partition count of
// its topics, see [SinkNaturalLimit]) every interval until ctx ends, and
// calls cc.RequestTaskReconfiguration when it differs from the last value
// seen. initial is the limit the current task configs were made for. Run it
// in a goroutine from Connector.Start; errors are logged and retried.
func WatchSinkPartitions(ctx context.Context, cc ConnectorContext, config map[string]string, initial int, interval time.Duration) {
	if interval <= 0 {
		return
	}
	last := initial
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, _, err := SinkNaturalLimit(ctx, cc, config)
		if err != nil {
			if ctx.Err() == nil {
				cc.Logger().Warn("checking partition counts of sink topics", "error", err)
			}
			continue
		}
		if n != last {
			cc.Logger().Info("partition count of sink topics changed; requesting task reconfiguration", "from", last, "to", n)
			last = n
			cc.RequestTaskReconfiguration()
		}
	}
}
