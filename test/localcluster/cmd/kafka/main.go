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

// Command kafka runs the franz-go kfake broker as a standalone process, for the local
// cluster and for real clients such as kcat. It prints "KAFKA_ADDR=host:port" once it
// listens, keeps its log in --data-dir so it survives restarts, and stops on SIGINT/SIGTERM.
// With --faults-file it refuses the requests that file describes (kfake's faults), so a
// test can make the broker refuse one client's reads while it runs (test/localcluster/kafkafault).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/test/localcluster/kafkafault"
)

func main() {
	host := flag.String("host", "127.0.0.1", "loopback address to listen on")
	port := flag.Int("port", 9092, "port to listen on (0: a free one)")
	dataDir := flag.String("data-dir", "", "folder that keeps topics and records across restarts (empty: memory only)")
	partitions := flag.Int("partitions", 1, "partitions of auto-created topics (Kafka's num.partitions)")
	autoCreate := flag.Bool("auto-create-topics", true, "create topics on first use (Kafka's auto.create.topics.enable)")
	faultsFile := flag.String("faults-file", "", "JSON file of requests to refuse, re-read while the broker runs (empty: none)")
	flag.Parse()

	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.DefaultNumPartitions(*partitions),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(*host, p))
		}),
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kafka: starting kfake on %s:%d: %v\n", *host, *port, err)
		os.Exit(1)
	}
	if *faultsFile != "" {
		go kafkafault.Watch(c, *faultsFile)
	}
	addrs := c.ListenAddrs()
	fmt.Printf("KAFKA_ADDR=%s\n", addrs[0])

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	fmt.Fprintf(os.Stderr, "kafka: %v, shutting down\n", s)
	c.Close()
}
