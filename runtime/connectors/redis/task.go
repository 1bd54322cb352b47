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

package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/plugin/sinkwriter"
)

// Task turns records into commands in Put and writes them on its own
// writer goroutine, one pipeline at a time, so that the runtime fetches
// and converts the next records while Redis works on the previous ones.
//
// The contract:
//   - Put encodes its records (a record that cannot be written, such as
//     one without a key, goes to the errant record reporter, or fails Put
//     naming its position when there is none) and queues them; it waits
//     only while redis.batch.size records are queued.
//   - A write takes up to redis.batch.size queued records, in put order,
//     and sends them as one pipeline, one at a time. A pipeline that fails
//     on the network (or on a server that is loading, read-only or out of
//     memory) is sent again after a backoff, until it succeeds or its
//     context ends: SET, DEL and HSET are idempotent, so a partly applied
//     pipeline written again ends the same. A command the server refuses
//     for good (WRONGTYPE, say) goes to the errant record reporter, or
//     fails the task with an error naming the record.
//
// The queue, Flush, Close (after the pipeline in flight, so no write of
// this task lands after the next owner's) and Stop are sinkwriter's.
type Task struct {
	s      *settings
	log    *slog.Logger
	errant plugin.ErrantRecordReporter
	client goredis.UniversalClient
	// Open, Flush and Close are the Writer's; nil before Start.
	*sinkwriter.Writer[op]
}

// Start parses the configuration and starts the writer.
func (t *Task) Start(_ context.Context, tc plugin.SinkTaskContext, config map[string]string) error {
	s, err := parse(config)
	if err != nil {
		return err
	}
	t.s, t.log, t.errant = s, tc.Logger(), tc.ErrantRecordReporter()
	t.client = s.client()
	t.Writer = sinkwriter.Start(sinkwriter.Config[op]{
		Name: "Redis", Write: t.write,
		BatchSize: s.batchSize, MaxQueued: s.batchSize, Go: tc.Go,
	})
	return nil
}

// Put encodes the records and queues them for the writer.
func (t *Task) Put(ctx context.Context, records []*plugin.SinkRecord) error {
	return t.Writer.PutRecords(ctx, records, t.s.encode, t.errant)
}

// Stop cancels the pipeline in flight, waits for it and closes the
// client; records not flushed are delivered again.
func (t *Task) Stop() error {
	if t.Writer == nil {
		return nil
	}
	t.Writer.Stop()
	return t.client.Close()
}

// write sends one batch until it is written, it fails for good or ctx
// ends (Stop, or a Close that gave up waiting: the batch is retried).
func (t *Task) write(ctx context.Context, batch []op) ([]op, error) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		cmds, err := t.pipeline(ctx, batch)
		if err == nil {
			if attempt > 1 {
				t.log.Info("Redis writes resumed", "attempts", attempt, "records", len(batch))
			}
			return nil, nil
		}
		if ctx.Err() != nil {
			return batch, plugin.Retriable(fmt.Errorf("writing %d records to Redis: %w", len(batch), context.Cause(ctx)))
		}
		if !retriable(err) || (!t.s.cluster && redirected(err)) {
			return batch, t.refused(ctx, batch, cmds)
		}
		t.log.Warn("writing to Redis failed; retrying the batch", "records", len(batch), "attempt", attempt, "backoff", backoff, "error", err)
		select {
		case <-ctx.Done():
			return batch, plugin.Retriable(fmt.Errorf("writing %d records to Redis: %w", len(batch), context.Cause(ctx)))
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// pipeline sends the batch's commands as one pipeline; cmds[i] holds the
// commands of batch[i]. It returns the first error, retriable ones first.
func (t *Task) pipeline(ctx context.Context, batch []op) ([][]goredis.Cmder, error) {
	p := t.client.Pipeline()
	cmds := make([][]goredis.Cmder, len(batch))
	for i, o := range batch {
		switch {
		case t.s.mode == ModeStream:
			cmds[i] = []goredis.Cmder{p.XAdd(ctx, &goredis.XAddArgs{Stream: o.key, Values: o.fields})}
		case o.del:
			cmds[i] = []goredis.Cmder{p.Del(ctx, o.key)}
		case t.s.mode == ModeHash:
			cmds[i] = []goredis.Cmder{p.Del(ctx, o.key), p.HSet(ctx, o.key, o.fields...)}
			if t.s.ttl > 0 {
				cmds[i] = append(cmds[i], p.PExpire(ctx, o.key, t.s.ttl))
			}
		default:
			cmds[i] = []goredis.Cmder{p.Set(ctx, o.key, o.value, t.s.ttl)}
		}
	}
	_, err := p.Exec(ctx)
	if err == nil {
		return cmds, nil
	}
	for _, cs := range cmds {
		for _, c := range cs {
			if e := c.Err(); e != nil && retriable(e) && (t.s.cluster || !redirected(e)) {
				return cmds, e
			}
		}
	}
	return cmds, err
}

// refused hands the records whose commands the server refused for good
// to the errant record reporter, or returns the error naming the first.
func (t *Task) refused(ctx context.Context, batch []op, cmds [][]goredis.Cmder) error {
	for i, cs := range cmds {
		for _, c := range cs {
			err := c.Err()
			if err == nil {
				continue
			}
			r := batch[i].rec
			if redirected(err) {
				return fmt.Errorf("Redis redirected %s (%v): the server is a Redis Cluster; set redis.cluster.enabled=true", strings.ToUpper(c.Name()), err)
			}
			if authFailed(err) {
				// No record's fault: the task fails, nothing goes to the dead letter queue.
				return fmt.Errorf("Redis refused the credentials (redis.username, redis.password): %w", err)
			}
			err = fmt.Errorf("record %s/%d: Redis refused %s: %w", r.TopicPartition(), r.Offset, strings.ToUpper(c.Name()), err)
			if t.errant == nil {
				return err
			}
			if rerr := t.errant.Report(ctx, r, err); rerr != nil {
				return rerr
			}
			break
		}
	}
	return nil
}

// retriable tells errors worth sending again (the network, a server that
// is starting, a replica, a full memory, a cluster moving slots) from a
// command the server refuses for good.
func retriable(err error) bool {
	var re goredis.Error
	if !errors.As(err, &re) {
		return true // the network, a timeout, a closed connection
	}
	msg := re.Error()
	for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "BUSY", "OOM", "MOVED", "ASK", "NOREPLICAS"} {
		if strings.HasPrefix(msg, p+" ") || msg == p {
			return true
		}
	}
	return false
}

// authFailed tells a refusal of the credentials.
func authFailed(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS")
}

// redirected tells a cluster's MOVED or ASK answer, which only a cluster
// client follows.
func redirected(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}
