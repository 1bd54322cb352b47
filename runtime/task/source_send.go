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

package task

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/data"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// sender converts and produces the polled batches in order. After the
// first failure it produces nothing more (the task fails; the records
// after the failing one are polled again after a restart).
func (r *SourceRunner) sender(ctx context.Context) {
	defer close(r.senderDone)
	for recs := range r.sendCh {
		if r.producerErr() == nil {
			if err := safe("converting and producing source records", func() error {
				return r.sendBatch(ctx, recs)
			}); err != nil {
				r.setProduceErr(err)
			}
		}
		r.queued.Add(-int64(len(recs)))
		r.subs.signalChanged()
	}
}

// sendBatch transforms and converts a polled batch, registers the
// converted records with the tracker under one lock, and produces them in
// order. When transforming or converting a record fails (and the errors.*
// settings do not skip it), the records before it are still produced and
// the error is returned. Produce blocks while the producer's buffer is
// full, which is the backpressure on Poll.
//
// A batch allocates nothing per record: the kgo records, the tracker
// entries and the record contexts are one slice each, converters that
// implement converter.Appender serialise keys and values into one buffer,
// and these buffers serve a later batch once every record of this one left
// the tracker (see sendBuffers).
func (r *SourceRunner) sendBatch(ctx context.Context, recs []*plugin.SourceRecord) error {
	bufs := r.bufs.get(ctx, len(recs))
	krs, pend, arena := bufs.krs[:0], bufs.pend[:0], bufs.arena[:0]
	var convErr error
	// Records without a timestamp get the batch's (kgo would read the
	// clock for each).
	now := time.Now()
	for _, rec := range recs {
		if rec == nil {
			continue
		}
		out := rec
		if r.cfg.chain != nil {
			var err error
			if out, err = r.transform(ctx, rec, now); err != nil {
				convErr = err
				break
			}
		}
		if out != nil && r.cfg.Reserved.Reserved(out.Topic) {
			// The producer boundary: whatever named the topic (the task, a
			// topic.prefix, a router transform), an internal topic is
			// never written, whatever errors.tolerance says.
			convErr = r.cfg.Reserved.RecordError(out.Topic)
			break
		}
		krs = append(krs, kgo.Record{})
		kr := &krs[len(krs)-1]
		var pkey string
		var err error
		if out != nil {
			pkey, err = r.convert(out, kr, &arena)
		} else {
			// Dropped by a transform: tracked like the others (and acked
			// below, its kgo record left without a topic), so its source
			// offset is committed in order, as Kafka Connect does.
			pkey, err = r.partitionKey(rec.SourcePartition)
		}
		if err != nil {
			// Retried, skipped (kr left without a topic) or fatal, by the
			// errors.* settings.
			failed := rec
			if out != nil {
				failed = out // the transformed record is the one converted
			}
			if pkey, err = r.convertFailed(ctx, failed, kr, &arena, err); err != nil {
				krs = krs[:len(krs)-1]
				convErr = err
				break
			}
		}
		if kr.Timestamp.IsZero() {
			kr.Timestamp = now
		}
		// Hash the key for the partitioner now, while the converter's
		// output is still in the CPU's cache (kgo partitions much later).
		rc := &bufs.rctxs[len(krs)-1]
		rc.hashed = kr.Key != nil && kr.Partition < 0
		if rc.hashed {
			rc.keyHash = murmur2(kr.Key)
		}
		pend = append(pend, pendingRecord{key: pkey, rec: rec})
	}
	bufs.arena = arena // keep the grown buffer, if it grew
	if len(pend) == 0 {
		r.bufs.put(bufs)
		return convErr
	}
	// Size the next batch's buffer for records like these (with a little
	// room, so one slightly larger record does not double it).
	r.bufs.arenaHint = len(arena)/len(pend) + 16
	if r.topics != nil {
		// Topics are created before their first record is sent.
		for i := range krs {
			if t := krs[i].Topic; t != "" {
				if err := r.topics.ensure(ctx, t); err != nil {
					clear(pend)
					r.bufs.put(bufs)
					return err
				}
			}
		}
	}
	bufs.left.Store(int64(len(pend)))
	r.subs.submitInto(bufs.rctxs, pend, bufs)
	clear(pend) // the tracker holds what it needs; let the polled records go
	for i := range krs {
		if krs[i].Topic == "" {
			// Skipped after an error or dropped by a transform: nothing
			// to produce; acknowledged at once, so its source offset
			// becomes committable.
			r.subs.ack(&bufs.rctxs[i].sub, nil)
			continue
		}
		// The record's Context carries its tracker entry to the promise,
		// so one promise function serves every record.
		krs[i].Context = &bufs.rctxs[i]
		r.client.Produce(ctx, &krs[i], r.promise)
	}
	return convErr
}

// recordContext is the Context of a produced record: the runner's context
// (the same for every record of a runner) plus the record's tracker entry
// and, when hashed, the murmur2 hash of its key for the partitioner. The
// entry lives inside the context, not behind a pointer: the promise then
// reaches it without one more cache miss per record (batches in flight
// are larger than the CPU's caches).
type recordContext struct {
	context.Context
	sub     submittedRecord
	keyHash uint32
	hashed  bool
}

// produced is the promise of every produced record.
func (r *SourceRunner) produced(kr *kgo.Record, err error) {
	if err != nil {
		r.setProduceErr(fmt.Errorf("producing to topic %s: %w", kr.Topic, err))
		r.subs.signalChanged()
		return
	}
	r.cfg.Metrics.SourceWritten(1)
	r.subs.ack(&kr.Context.(*recordContext).sub, kr)
}

// convert fills kr from rec and returns rec's source partition key.
// Converters that implement converter.Appender serialise into *arena.
func (r *SourceRunner) convert(rec *plugin.SourceRecord, kr *kgo.Record, arena *[]byte) (string, error) {
	if rec.Topic == "" {
		return "", errors.New("source task returned a record without a topic")
	}
	key, err := serialize(r.cfg.KeyConverter, r.keyApp, arena, rec.Topic, rec.KeySchema, rec.Key)
	if err != nil {
		return "", stageErr(StageKeyConverter, r.cfg.KeyConverter, fmt.Errorf("converting key of a record for topic %s: %w", rec.Topic, err))
	}
	value, err := serialize(r.cfg.ValueConverter, r.valueApp, arena, rec.Topic, rec.ValueSchema, rec.Value)
	if err != nil {
		return "", stageErr(StageValueConverter, r.cfg.ValueConverter, fmt.Errorf("converting value of a record for topic %s: %w", rec.Topic, err))
	}
	*kr = kgo.Record{Topic: rec.Topic, Key: key, Value: value, Partition: -1, Timestamp: rec.Timestamp}
	if rec.Partition != nil {
		kr.Partition = *rec.Partition
	}
	for _, h := range rec.Headers {
		b, err := headerBytes(rec.Topic, h.Schema, h.Value)
		if err != nil {
			return "", stageErr(StageHeaderConverter, converter.StringConverter{}, fmt.Errorf("converting header %q of a record for topic %s: %w", h.Key, rec.Topic, err))
		}
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: b})
	}
	return r.partitionKey(rec.SourcePartition)
}

// serialize converts one key or value: appended to *arena when the
// converter is an Appender (app non-nil), else with FromConnectData. The
// returned slice has no spare capacity, so nothing appended later can
// overwrite it (a grown arena moves on; earlier slices keep the old array).
func serialize(c converter.Converter, app converter.Appender, arena *[]byte, topic string, schema *data.Schema, v any) ([]byte, error) {
	if app == nil {
		return c.FromConnectData(topic, schema, v)
	}
	start := len(*arena)
	out, null, err := app.AppendConnectData(*arena, topic, schema, v)
	if err != nil || null {
		return nil, err
	}
	*arena = out
	return out[start:len(out):len(out)], nil
}

func (r *SourceRunner) setProduceErr(err error) {
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	if r.produceErr == nil {
		r.produceErr = err
	}
}

func (r *SourceRunner) producerErr() error {
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	return r.produceErr
}

// headerBytes serialises a header value like Kafka's SimpleHeaderConverter
// does for the common cases: bytes as they are, nil as a null header,
// everything else in its string form.
func headerBytes(topic string, schema *data.Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return converter.StringConverter{}.FromConnectData(topic, schema, v)
}
