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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// eosRound runs the same RangeSource (one task, -records records, batches
// of 2000) on a worker without exactly-once and on one with
// exactly.once.source.support=enabled (transaction.boundary=poll, the
// default: one transaction per polled batch, records and source offsets
// in it), one right after the other. Each run is timed from the connector's
// creation until the source offset it stored covers every record, so both
// pay for their offset commits in the same way (at-least-once writes
// offsets every offset.flush.interval.ms, 200 ms here; exactly-once commits
// them with each transaction). The ratio is exactly-once records/s over
// at-least-once records/s.
// The ratio of the round is appended to ratios; a nil eos worker (-only
// names another measurement) does nothing.
func eosRound(ctx context.Context, alo, eos *workerProc, round int, ratios *[]float64) error {
	if eos == nil {
		return nil
	}
	aloRate, err := sourceRunToOffset(ctx, alo, fmt.Sprintf("bench-alo-%d", round))
	if err != nil {
		return err
	}
	eosRate, err := sourceRunToOffset(ctx, eos, fmt.Sprintf("bench-eos-%d", round))
	if err != nil {
		return err
	}
	logf("round %d: range source at-least-once %.0f rec/s, exactly-once %.0f rec/s: source_eos_vs_atleastonce_ratio %.3f", round, aloRate, eosRate, eosRate/aloRate)
	*ratios = append(*ratios, eosRate/aloRate)
	return nil
}

// startEOSWorker starts the exactly-once worker (group bench-eos, its own
// internal topics) unless -only names another measurement.
func startEOSWorker(ctx context.Context, bin, dir, addr string) (*workerProc, error) {
	if *only != "" && *only != "eos" {
		return nil, nil
	}
	return startWorker(ctx, bin, dir, addr, "bench-eos", flushOften, "exactly.once.source.support=enabled")
}

// sourceRunToOffset creates a RangeSource on worker w and measures the
// time until its stored offset says every record was written.
func sourceRunToOffset(ctx context.Context, w *workerProc, name string) (float64, error) {
	start := time.Now()
	err := rest(ctx, "POST", w.url+"/connectors", map[string]any{"name": name, "config": map[string]string{
		"connector.class": "RangeSource", "topic": name, "count": strconv.Itoa(*records), "tasks.max": "1",
		"record.size": strconv.Itoa(max(*recordSize-30, 0)), "batch.size": "2000",
		"value.converter": "JsonConverter", "value.converter.schemas.enable": "false", "key.converter": "StringConverter",
	}})
	if err != nil {
		return 0, err
	}
	for {
		next, err := storedNext(ctx, w.url+"/connectors/"+name+"/offsets")
		if err == nil && next >= int64(*records) {
			break
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for the offsets of %s: %w", name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	rate := float64(*records) / time.Since(start).Seconds()
	if err := rest(ctx, "DELETE", w.url+"/connectors/"+name, nil); err != nil {
		return 0, err
	}
	return rate, nil
}

// storedNext reads a RangeSource's stored offsets: the smallest "next" id
// over its source partitions (-1 before any is stored).
func storedNext(ctx context.Context, url string) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, err
	}
	defer resp.Body.Close()
	var body struct {
		Offsets []struct {
			Offset map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return -1, err
	}
	if len(body.Offsets) == 0 {
		return -1, nil
	}
	low := int64(-1)
	for _, o := range body.Offsets {
		n, ok := o.Offset["next"].(float64)
		if !ok {
			return -1, nil
		}
		if low < 0 || int64(n) < low {
			low = int64(n)
		}
	}
	return low, nil
}
