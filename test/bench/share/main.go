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

// Command share measures share-group sinks (KIP-932) against the
// consumer-group mode in the same run, and prints "conveyor-bench:
// NAME=VALUE" lines:
//
//   - share_sink_vs_classic_ratio: records per second written by a
//     rate-limited FileSink in share mode with 8 tasks, over the same sink
//     in consumer-group mode with 2 tasks (the most the topic's 2
//     partitions allow); the same topic, the same per-task rate, measured over
//     the same window once every task of the mode has written (target >= 3;
//     8/2 = 4 is the ceiling);
//   - share_sink_records_per_s and classic_sink_records_per_s, the two rates.
//
// The tasks run in this process on the worker's own task runner
// (runtime/task), against an in-process kfake broker.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/connectors/file"
	"github.com/conveyor-dev/conveyor/runtime/converter"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/task"
)

var (
	rate   = flag.Int("rate", 100, "records per second each task writes")
	window = flag.Duration("window", 8*time.Second, "measurement window of each mode")
)

func report(name string, v float64) {
	fmt.Printf("conveyor-bench: %s=%s\n", name, strconv.FormatFloat(v, 'f', 3, 64))
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	const partitions = 2
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "in"),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "100"}))
	if err != nil {
		return err
	}
	defer k.Close()
	addr := k.ListenAddrs()
	// Enough records that neither mode runs out within its window.
	n := 8 * *rate * int(window.Seconds()+20)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "in", Value: []byte(strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		return err
	}
	cl.Close()
	classic, err := measure(addr, "classic", partitions, false)
	if err != nil {
		return err
	}
	share, err := measure(addr, "share", 8, true)
	if err != nil {
		return err
	}
	report("classic_sink_records_per_s", classic)
	report("share_sink_records_per_s", share)
	report("share_sink_vs_classic_ratio", share/classic)
	return nil
}

type status struct{}

func (status) TaskState(task.ID, task.State, string) {}

// measure runs tasks tasks of the connector, waits until each has
// written, and returns the records per second written over the window.
func measure(addr []string, name string, tasks int, share bool) (float64, error) {
	dir, err := os.MkdirTemp("", "conveyor-bench-share-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	var runners []*task.SinkRunner
	defer func() {
		for _, r := range runners {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = r.Stop(ctx)
			cancel()
		}
	}()
	for i := range tasks {
		config := map[string]string{plugin.KeyTopics: "in", file.KeyFile: filepath.Join(dir, fmt.Sprintf("task-%d.txt", i)), file.KeySinkRate: strconv.Itoa(*rate)}
		if share {
			config[plugin.KeyConsumerGroupType] = plugin.GroupTypeShare
		}
		r, err := task.NewSinkRunner(task.SinkConfig{Common: task.Common{
			ID: task.ID{Connector: name, Task: i}, Config: config,
			KeyConverter: converter.StringConverter{}, ValueConverter: converter.StringConverter{},
			Kafka: []kgo.Opt{kgo.SeedBrokers(addr...), kgo.HeartbeatInterval(100 * time.Millisecond)}, Status: status{},
			OffsetFlushInterval: time.Second,
		}, Task: &file.SinkTask{}, Share: share})
		if err != nil {
			return 0, err
		}
		if err := r.Start(context.Background()); err != nil {
			return 0, err
		}
		runners = append(runners, r)
	}
	count := func() (total int, each []int) {
		for i := range tasks {
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("task-%d.txt", i)))
			c := bytes.Count(b, []byte{'\n'})
			each = append(each, c)
			total += c
		}
		return total, each
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, each := count()
		all := true
		for _, c := range each {
			all = all && c > 0
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s: not every task wrote within 60s: %v", name, each)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c0, _ := count()
	t0 := time.Now()
	time.Sleep(*window)
	c1, each := count()
	perS := float64(c1-c0) / time.Since(t0).Seconds()
	fmt.Fprintf(os.Stderr, "%s: %d tasks, %.1f records/s, written per task %v\n", name, tasks, perS, each)
	return perS, nil
}
