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
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/localcluster"
)

// devMarker marks a folder that `dev` created, so that a later run may wipe it.
const devMarker = ".conveyor-dev"

// samplesNamespace is where `dev` applies config/samples.
const samplesNamespace = "default"

// switchWriter passes writes on until muted (the cluster's progress lines are useful while
// it starts, noise afterwards; they stay in DIR/logs/localcluster.log).
type switchWriter struct {
	mu    sync.Mutex
	w     io.Writer
	muted bool
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.muted {
		return len(p), nil
	}
	return s.w.Write(p)
}

func (s *switchWriter) mute() { s.mu.Lock(); s.muted = true; s.mu.Unlock() }

func step(n int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "\n==> [%d/6] %s\n", n, fmt.Sprintf(format, args...))
}

// dev runs the main job of `make dev`: local cluster, Conveyor through Helm, the samples
// against the local Kafka, and a summary; Ctrl-C stops everything.
func dev(dir, podIPPrefix string, kafkaPort int, images imageFlags, loopback bool) (retErr error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() {
		if retErr != nil && ctx.Err() != nil {
			retErr = nil // Ctrl-C while starting: stopping is what was asked for
		}
	}()
	// controller-runtime's client wants a logger; ours has nothing to say.
	ctrllog.SetLogger(logr.Discard())
	began := time.Now()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := prepareDir(dir); err != nil {
		return err
	}
	root, err := localcluster.ModuleRoot(ctx)
	if err != nil {
		return err
	}

	step(1, "Kubernetes binaries and helm (hack/build-test-binaries.sh; the first run builds them from the Go module proxy, about ten minutes on two cores)")
	assets, err := localcluster.ToolsDir(ctx, root, "all", os.Stderr)
	if err != nil {
		return err
	}
	tools, err := localcluster.ToolsDir(ctx, root, "tools", os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "    %s\n    %s\n", assets, tools)
	kedaDir := ""
	if !loopback {
		fmt.Fprintf(os.Stderr, "    KEDA %s's operator and metrics API server (hack/build-keda.sh; the first run builds them, about 10 minutes on two cores)\n", localcluster.KEDAVersion)
		if kedaDir, err = localcluster.BuildKEDA(ctx, os.Stderr); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "    %s\n", kedaDir)
	}

	imageDir := filepath.Join(dir, "images", "conveyor")
	step(2, "building the Conveyor image's binaries (conveyor, conveyor-worker) into %s", imageDir)
	if err := localcluster.BuildConveyorImage(ctx, imageDir); err != nil {
		return err
	}
	images[localcluster.DefaultConveyorImage] = imageDir

	what := "in a network namespace of its own, with KEDA"
	if loopback {
		what = "in this machine's network namespace, without KEDA"
	}
	step(3, "starting the local cluster (etcd, kube-apiserver, kube-controller-manager, process kubelet, Kafka) %s, in %s", what, dir)
	progress := &switchWriter{w: os.Stderr}
	c, err := localcluster.Start(ctx, localcluster.Options{
		Dir: dir, AssetsDir: assets, Images: images, PodIPPrefix: podIPPrefix, KafkaPort: kafkaPort,
		NetNS: !loopback, KEDA: !loopback, KEDADir: kedaDir, Log: progress,
	})
	if err != nil {
		return err
	}
	progress.mute()
	defer func() {
		fmt.Fprintln(os.Stderr, "\n==> stopping: pods (SIGTERM, then SIGKILL after their grace period), Kafka, control plane")
		if err := c.Stop(); err != nil {
			retErr = errors.Join(retErr, err)
			return
		}
		fmt.Fprintf(os.Stderr, "==> stopped; logs and Kafka data stay in %s (the next `make dev` starts afresh)\n", dir)
	}()
	cv, err := localcluster.NewConveyor(c, root, filepath.Join(tools, "helm"))
	if err != nil {
		return err
	}

	step(4, "helm install %s %s --namespace %s (waits until the operator is Ready)", cv.Release, cv.ChartDir(), cv.Namespace)
	if _, err := cv.HelmInstall(ctx); err != nil {
		return err
	}

	samples := filepath.Join(dir, "samples")
	step(5, "kubectl apply -f %s (config/samples with bootstrapServers set to the local Kafka %s)", samples, c.KafkaAddr)
	if _, err := localcluster.RenderSamples(root, samples, c.KafkaAddr); err != nil {
		return err
	}
	// The sample sink's topic gets 3 partitions, so that the sink runs 3 tasks (of its 6)
	// and its lag can ask for up to 3 workers, more than the sample's minReplicas.
	if err := createTopic(ctx, c.KafkaAddr, sampleTopic, sampleTopicPartitions); err != nil {
		return err
	}
	out, err := c.RunKubectl(ctx, "", "apply", "-n", samplesNamespace, "-f", samples)
	if err != nil {
		return err
	}
	fmt.Fprint(os.Stderr, indent(out))

	step(6, "waiting until the sample connectors and their tasks are RUNNING")
	kcs, err := cv.WaitConnectorsRunning(ctx, samplesNamespace, 5*time.Minute)
	if err != nil {
		return fmt.Errorf("%w\n(operator log: %s/logs/%s_*_operator.log; worker logs: %s/logs/%s_*.log)", err, dir, cv.Namespace, dir, samplesNamespace)
	}
	if err := summary(ctx, cv, kcs, time.Since(began)); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// prepareDir empties a folder left by an earlier `dev` run and refuses any other non-empty
// folder.
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("reading --dir %s: %w", dir, err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, devMarker)); err != nil {
			return fmt.Errorf("--dir %s is not empty and was not made by `dev`: choose another folder (make dev DEV_DIR=...)", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing the previous run's folder %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return os.WriteFile(filepath.Join(dir, devMarker), []byte("made by `localcluster dev`; removed by the next run\n"), 0o644)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ") + "\n"
}

// summary prints what runs and commands that work against it.
func summary(ctx context.Context, cv *localcluster.Conveyor, kcs []v1alpha1.KafkaConnector, took time.Duration) error {
	c := cv.Cluster
	kubectl := c.Kubectl() + " --kubeconfig " + c.Kubeconfig
	op, err := cv.OperatorPod(ctx, time.Minute)
	if err != nil {
		return err
	}
	clusterNames := map[string]bool{}
	var b strings.Builder
	fmt.Fprintf(&b, "\nConveyor is running (ready in %s). Ctrl-C stops everything.\n\n", took.Round(time.Second))
	fmt.Fprintf(&b, "  operator    %s/%s on %s (Helm release %s)\n", op.Namespace, op.Name, op.Status.PodIP, cv.Release)
	fmt.Fprintf(&b, "  kafka       %s (kfake; data in %s/kafka)\n", c.KafkaAddr, c.Dir)
	for _, kc := range kcs {
		clusterNames[kc.Spec.ClusterRef.Name] = true
	}
	var restIP, restCluster string
	var topics []string
	for name := range clusterNames {
		pods, cc, err := cv.WorkerPods(ctx, samplesNamespace, name)
		if err != nil {
			return err
		}
		for _, p := range pods {
			fmt.Fprintf(&b, "  worker      %s/%s on %s:%d (ConnectCluster %s)\n", p.Namespace, p.Name, p.Status.PodIP, v1alpha1.RestPort, cc.Name)
			if restIP == "" && localcluster.PodReady(&p) {
				restIP, restCluster = p.Status.PodIP, cc.Name
			}
		}
	}
	for _, kc := range kcs {
		limit := ""
		if tl := kc.Status.TaskLimit; tl != nil && kc.Status.EffectiveTasks < kc.Status.TasksMax {
			limit = fmt.Sprintf(", limited by %s", tl.Reason)
		}
		fmt.Fprintf(&b, "  connector   %s/%s %s %s, %d of tasksMax %d tasks%s\n", kc.Namespace, kc.Name, kc.Spec.Class, kc.Status.State,
			kc.Status.EffectiveTasks, kc.Status.TasksMax, limit)
		for _, t := range kc.Status.Topics {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	topic := "numbers"
	if len(topics) > 0 {
		topic = topics[0]
	}
	listing, err := c.RunKubectl(ctx, "", "get", "connectclusters,kafkaconnectors", "-A")
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n$ kubectl get connectclusters,kafkaconnectors -A\n%s", listing)
	fmt.Fprintf(&b, "\nTry:\n")
	fmt.Fprintf(&b, "  # what runs; -o wide adds what limits each connector's tasks and a sink's lag\n")
	fmt.Fprintf(&b, "  %s get connectclusters,kafkaconnectors -A\n", kubectl)
	fmt.Fprintf(&b, "  %s get kafkaconnectors -n %s -o wide\n", kubectl, samplesNamespace)
	fmt.Fprintf(&b, "  %s get pods -A -o wide\n", kubectl)
	fmt.Fprintf(&b, "  # the last records the source wrote; every topic, the cluster's internal ones too\n")
	fmt.Fprintf(&b, "  kcat -b %s -t %s -C -e -o -5\n", c.KafkaAddr, topic)
	fmt.Fprintf(&b, "  kcat -b %s -L\n", c.KafkaAddr)
	if restIP != "" {
		restAddr := fmt.Sprintf("%s:%d", restIP, v1alpha1.RestPort)
		forwarded := ""
		if port, err := c.Forward(0, restAddr); err == nil {
			forwarded = fmt.Sprintf(" (forwarded from 127.0.0.1:%d: pod addresses live in the cluster's network namespace)", port)
			restAddr = fmt.Sprintf("127.0.0.1:%d", port)
		}
		fmt.Fprintf(&b, "  # the Kafka Connect REST API of worker %s%s; bearer token from Secret %s%s:\n", restIP, forwarded, restCluster, v1alpha1.RestTokenSecretSuffix)
		fmt.Fprintf(&b, "  TOKEN=$(%s get secret -n %s %s%s -o jsonpath='{.data.%s}' | base64 -d)\n", kubectl, samplesNamespace, restCluster, v1alpha1.RestTokenSecretSuffix, v1alpha1.RestTokenSecretKey)
		fmt.Fprintf(&b, "  curl -H \"Authorization: Bearer $TOKEN\" 'http://%s/connectors?expand=status'\n", restAddr)
	}
	if c.KEDA() {
		hpa, err := c.RunKubectl(ctx, "", "get", "scaledobjects,hpa", "-n", samplesNamespace)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "\nAutoscaling (KEDA %s and the HPA; the sink's lag adds workers, up to one per sink task):\n", localcluster.KEDAVersion)
		fmt.Fprintf(&b, "$ kubectl get scaledobjects,hpa -n %s\n%s", samplesNamespace, hpa)
		fmt.Fprintf(&b, "  # watch the workers follow the lag\n")
		fmt.Fprintf(&b, "  %s get hpa,connectclusters -n %s -w\n", kubectl, samplesNamespace)
		fmt.Fprintf(&b, "  # make lag: slow the sink to 20 records/s per task, then write 30000 records\n")
		fmt.Fprintf(&b, "  %s patch kafkaconnector -n %s numbers-to-file --type=merge -p '{\"spec\":{\"config\":{\"rate\":\"20\"}}}'\n", kubectl, samplesNamespace)
		fmt.Fprintf(&b, "  seq 1 30000 | kcat -b %s -t %s -P\n", c.KafkaAddr, sampleTopic)
		fmt.Fprintf(&b, "  # let it drain (rate 0: no limit); the workers scale down after the cooldown (2m)\n")
		fmt.Fprintf(&b, "  %s patch kafkaconnector -n %s numbers-to-file --type=merge -p '{\"spec\":{\"config\":{\"rate\":\"0\"}}}'\n", kubectl, samplesNamespace)
	}
	fmt.Fprintf(&b, "\n  export KUBECONFIG=%s   # then plain kubectl and helm work too\n", c.Kubeconfig)
	fmt.Fprintf(&b, "  logs: %s/logs/<namespace>_<pod>_<container>.log; samples as applied: %s/samples\n", c.Dir, c.Dir)
	fmt.Print(b.String())
	return nil
}

// sampleTopic is the topic of the sample source and sink; sampleTopicPartitions its
// partition count in `dev`.
const (
	sampleTopic           = "numbers"
	sampleTopicPartitions = 3
)

// createTopic creates a topic on the local Kafka (an existing one is fine).
func createTopic(ctx context.Context, addr, topic string, partitions int32) error {
	kc, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return fmt.Errorf("connecting to Kafka %s: %w", addr, err)
	}
	defer kc.Close()
	resp, err := kadm.NewClient(kc).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s with %d partitions: %w", topic, partitions, err)
	}
	return nil
}
