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

// Command localcluster runs a local Kubernetes cluster with a process kubelet and a Kafka
// broker (see package test/localcluster) until Ctrl-C.
//
//	go run ./test/localcluster/cmd/localcluster up --dir DIR
//	go run ./test/localcluster/cmd/localcluster dev --dir DIR   (what `make dev` runs)
//
// `dev` also installs Conveyor with its Helm chart, applies config/samples against the
// local Kafka, waits until the sample connectors run and prints how to look at them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/conveyor-dev/conveyor/test/localcluster"
)

const usage = `localcluster runs a local Kubernetes cluster (etcd, kube-apiserver,
kube-controller-manager, a process kubelet) and a Kafka broker, until Ctrl-C.

Usage:
  localcluster up --dir DIR [flags]
  localcluster dev --dir DIR [flags]
      up, then install Conveyor with charts/conveyor, apply config/samples against the
      local Kafka, wait until the connectors run and print how to look at them.

Flags:
`

type imageFlags map[string]string

func (f imageFlags) String() string { return fmt.Sprint(map[string]string(f)) }
func (f imageFlags) Set(v string) error {
	prefix, dir, ok := strings.Cut(v, "=")
	if !ok || prefix == "" || dir == "" {
		return fmt.Errorf("--image %q: want PREFIX=FOLDER", v)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	f[prefix] = abs
	return nil
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "up" && os.Args[1] != "dev") {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	dir := fs.String("dir", "", "folder for kubeconfig, logs, pod folders and Kafka data (required)")
	conveyorBin := fs.String("conveyor-bin", "", "folder with conveyor and conveyor-worker for image "+localcluster.DefaultConveyorImage+" (empty: build them into DIR/images/conveyor)")
	noConveyor := fs.Bool("no-conveyor-image", false, "do not map the Conveyor image")
	podIPPrefix := fs.String("pod-ip-prefix", "", `pod address prefix such as "127.0.0." (empty: a random 127.X.Y.)`)
	kafkaPort := fs.Int("kafka-port", 0, "Kafka port (0: a free one)")
	netns := fs.Bool("netns", false, "up: run the cluster in a network namespace of its own (pods on 10.200.1.N; API server and Kafka forwarded to 127.0.0.1)")
	keda := fs.Bool("keda", false, "up: install KEDA (implies --netns; builds it with hack/build-keda.sh on first use)")
	loopback := fs.Bool("loopback", false, "dev: run in the machine's own network namespace on 127.X.Y.N pod addresses, without KEDA (no autoscaling)")
	images := imageFlags{}
	fs.Var(images, "image", "PREFIX=FOLDER: run containers whose image starts with PREFIX from the binaries in FOLDER (repeatable)")
	_ = fs.Parse(os.Args[2:])
	if *dir == "" {
		fs.Usage()
		os.Exit(2)
	}
	if mode == "dev" {
		if *podIPPrefix != "" && !*loopback {
			fmt.Fprintln(os.Stderr, "dev: --pod-ip-prefix needs --loopback (in the network namespace pods get 10.200.1.N)")
			os.Exit(2)
		}
		if err := dev(*dir, *podIPPrefix, *kafkaPort, images, *loopback); err != nil {
			fmt.Fprintf(os.Stderr, "dev: %v\n", err)
			os.Exit(1)
		}
		return
	}
	opts := localcluster.Options{PodIPPrefix: *podIPPrefix, KafkaPort: *kafkaPort, Images: images, NetNS: *netns || *keda, KEDA: *keda}
	if err := run(*dir, *conveyorBin, *noConveyor, opts); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
}

func run(dir, conveyorBin string, noConveyor bool, opts localcluster.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if !noConveyor {
		if conveyorBin == "" {
			conveyorBin = filepath.Join(dir, "images", "conveyor")
			fmt.Fprintf(os.Stderr, "localcluster: building conveyor and conveyor-worker into %s\n", conveyorBin)
			if err := localcluster.BuildConveyorImage(ctx, conveyorBin); err != nil {
				return err
			}
		}
		if conveyorBin, err = filepath.Abs(conveyorBin); err != nil {
			return err
		}
		opts.Images[localcluster.DefaultConveyorImage] = conveyorBin
	}
	opts.Dir, opts.Log = dir, os.Stderr
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("KUBECONFIG=%s\n", c.Kubeconfig)
	fmt.Printf("KAFKA_ADDR=%s\n", c.KafkaAddr)
	fmt.Fprintf(os.Stderr, `
Local cluster is up. Try:
  export KUBECONFIG=%s
  %s get nodes,pods -A
  kcat -b %s -L
Pod logs: %s/logs/<namespace>_<pod>_<container>.log
Ctrl-C stops everything.
`, c.Kubeconfig, c.Kubectl(), c.KafkaAddr, c.Dir)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "localcluster: stopping")
	return c.Stop()
}
