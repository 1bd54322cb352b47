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

package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// StringConverter is Kafka Connect's string converter class.
const StringConverter = "org.apache.kafka.connect.storage.StringConverter"

// FileSink is the config of a bundled FileSink connector writing the
// values of topic to path, one line each.
func FileSink(topic, path string, tasks int) map[string]string {
	return map[string]string{
		"connector.class": "FileSink", "file": path, "topics": topic, "tasks.max": strconv.Itoa(tasks),
		"key.converter": StringConverter, "value.converter": StringConverter,
	}
}

// RangeSource is the config of a cheap bundled RangeSource connector: one
// 10-byte record per task, written to topic once; then the tasks idle.
func RangeSource(topic string, tasks int) map[string]string {
	n := strconv.Itoa(tasks)
	return map[string]string{
		"connector.class": "dev.conveyor.connect.range.RangeSourceConnector",
		"topic":           topic, "count": n, "tasks.max": n, "record.size": "10", "poll.interval.ms": "1000",
	}
}

// CreateConnectors creates n connectors named prefix-000, prefix-001...
// with the same config, through the given workers in turn (so followers
// forward to the leader), eight requests at a time.
func CreateConnectors(ctx context.Context, ws []*Worker, prefix string, n int, config map[string]string) error {
	if len(ws) == 0 {
		return errors.New("harness: no worker to create connectors through")
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := ws[i%len(ws)].REST.PutConnector(ctx, fmt.Sprintf("%s-%03d", prefix, i), config); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StartAll starts the named workers in parallel.
func (c *Cluster) StartAll(ctx context.Context, names ...string) ([]*Worker, error) {
	out := make([]*Worker, len(names))
	errs := make([]error, len(names))
	for _, n := range names {
		c.Address(n) // addresses in the order of names
	}
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = c.Start(ctx, n)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// TerminateAll sends SIGTERM to every given worker at once and waits up to
// timeout for each to exit cleanly.
func TerminateAll(ws []*Worker, timeout time.Duration) error {
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = w.Terminate(); errs[i] == nil {
				errs[i] = w.Wait(timeout)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
