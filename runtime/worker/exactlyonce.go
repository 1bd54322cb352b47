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

package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyor-dev/conveyor/runtime/connectnames"
	"github.com/conveyor-dev/conveyor/runtime/kafkalog"
	"github.com/conveyor-dev/conveyor/runtime/store"
)

// fenceTasks fences the transactional producers of tasks 0..tasks-1 of a
// connector, as Kafka's Admin.fenceProducers does: an InitProducerID with
// each transactional id bumps its epoch, so the broker aborts the open
// transaction of any instance still running and refuses its commits.
// Kafka answers CONCURRENT_TRANSACTIONS while it aborts one; that is
// retried until ctx ends.
func fenceTasks(ctx context.Context, cl *kgo.Client, groupID, connector string, tasks int) error {
	for i := 0; i < tasks; i++ {
		id := connectnames.TransactionalID(groupID, connector, i)
		if err := fenceProducer(ctx, cl, id); err != nil {
			return err
		}
	}
	return nil
}

func fenceProducer(ctx context.Context, cl *kgo.Client, id string) error {
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, kerr.ConcurrentTransactions) && !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			return fmt.Errorf("fencing transactional id %q: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fencing transactional id %q: %w (last: %w)", id, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// connOffsets opens and keeps the offset stores of connectors with an
// offsets.storage.topic of their own.
type connOffsets struct {
	open store.LogOpener

	mu     sync.Mutex
	stores map[string]*store.OffsetStore
}

// get returns the store of topic, opening it (read_committed) on first
// use.
func (c *connOffsets) get(ctx context.Context, topic string) (*store.OffsetStore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stores[topic]; ok {
		return s, nil
	}
	s, err := store.OpenOffsetStore(ctx, c.open, kafkalog.Topic{Name: topic, ReadCommitted: true})
	if err != nil {
		return nil, err
	}
	if c.stores == nil {
		c.stores = map[string]*store.OffsetStore{}
	}
	c.stores[topic] = s
	return s, nil
}

func (c *connOffsets) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.stores {
		s.Close()
	}
	c.stores = nil
}
