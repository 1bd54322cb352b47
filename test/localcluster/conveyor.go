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

package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// Conveyor is Conveyor installed on a local cluster the way users install it: the Helm
// chart with the real helm, resources applied with the real kubectl.
type Conveyor struct {
	Cluster *Cluster
	// Root is the repository (charts/conveyor, config/samples).
	Root string
	// Helm is the helm binary.
	Helm string
	// Namespace and Release are the Helm release's namespace and name.
	Namespace, Release string
	// Client reads Conveyor's resources (typed, with the v1alpha1 scheme).
	Client client.Client
}

// NewConveyor prepares a Conveyor installation on c; helm is the helm binary (see ToolsDir).
func NewConveyor(c *Cluster, root, helm string) (*Conveyor, error) {
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building a client for Conveyor's resources: %w", err)
	}
	return &Conveyor{Cluster: c, Root: root, Helm: helm, Namespace: "conveyor-system", Release: "conveyor", Client: cl}, nil
}

// ToolsDir runs `hack/build-test-binaries.sh WHAT` (WHAT is "k8s", "tools" or "all"),
// which builds what is missing (its progress goes to progress) and prints the folder.
func ToolsDir(ctx context.Context, root, what string, progress io.Writer) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-test-binaries.sh"), what)
	cmd.Stderr = progress
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/build-test-binaries.sh %s: %w", what, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// RunKubectl runs the cluster's kubectl with its admin kubeconfig; stdin may be empty. The
// error carries kubectl's output.
func (c *Cluster) RunKubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	return run(ctx, stdin, nil, c.Kubectl(), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
}

// RunHelm runs helm against the cluster (KUBECONFIG set, in the release's namespace).
func (cv *Conveyor) RunHelm(ctx context.Context, args ...string) (string, error) {
	env := []string{"KUBECONFIG=" + cv.Cluster.Kubeconfig, "HELM_NAMESPACE=" + cv.Namespace,
		// helm keeps caches and config under HOME; keep them in the cluster folder.
		"HELM_CACHE_HOME=" + filepath.Join(cv.Cluster.Dir, "helm", "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(cv.Cluster.Dir, "helm", "config"),
		"HELM_DATA_HOME=" + filepath.Join(cv.Cluster.Dir, "helm", "data")}
	return run(ctx, "", env, cv.Helm, args...)
}

func run(ctx context.Context, stdin string, env []string, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// ChartDir is the Helm chart's folder.
func (cv *Conveyor) ChartDir() string { return filepath.Join(cv.Root, "charts", "conveyor") }

// HelmInstall installs (or upgrades) the chart and waits until the operator is Ready. The
// operator listens on its pod IP (listenOnPodIP): local-cluster pods share the host's
// network namespace. extra are more helm flags (such as "--set", "logLevel=debug").
func (cv *Conveyor) HelmInstall(ctx context.Context, extra ...string) (string, error) {
	args := append([]string{"upgrade", "--install", cv.Release, cv.ChartDir(),
		"--namespace", cv.Namespace, "--create-namespace",
		"--set", "listenOnPodIP=true", "--wait", "--timeout", "3m"}, extra...)
	out, err := cv.RunHelm(ctx, args...)
	if err != nil {
		return out, err
	}
	if _, err := cv.OperatorPod(ctx, 2*time.Minute); err != nil {
		return out, err
	}
	return out, nil
}

// OperatorPod waits until exactly one operator pod runs and is Ready, and returns it.
func (cv *Conveyor) OperatorPod(ctx context.Context, timeout time.Duration) (*corev1.Pod, error) {
	var ready *corev1.Pod
	err := testkit.Until(ctx, timeout, "the operator pod to be Ready", func(ctx context.Context) (bool, error) {
		list, err := cv.Cluster.Client.CoreV1().Pods(cv.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/instance=" + cv.Release,
		})
		if err != nil {
			return false, err
		}
		var states []string
		ready = nil
		n := 0
		for i, p := range list.Items {
			states = append(states, p.Name+":"+string(p.Status.Phase))
			if p.DeletionTimestamp != nil {
				continue
			}
			n++
			if p.Status.Phase == corev1.PodRunning && PodReady(&p) {
				ready = &list.Items[i]
			}
		}
		return ready != nil && n == 1 && len(list.Items) == 1, fmt.Errorf("operator pods %v", states)
	})
	return ready, err
}

// PodReady reports the pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

var bootstrapLine = regexp.MustCompile(`(?m)^(\s*bootstrapServers:\s*).*$`)

// RenderSamples copies the YAML files of config/samples into outDir with every
// ConnectCluster's spec.kafka.bootstrapServers set to kafkaAddr (comments kept), so that
// `kubectl apply -f outDir` runs the samples against the local Kafka. It returns the files.
func RenderSamples(root, outDir, kafkaAddr string) ([]string, error) {
	src := filepath.Join(root, "config", "samples")
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("reading the samples: %w", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", outDir, err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue // the Kustomization file is for `kubectl apply -k`
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return nil, err
		}
		b = bootstrapLine.ReplaceAll(b, []byte("${1}"+kafkaAddr))
		// Check the result: every ConnectCluster now points at the local Kafka.
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("sample %s: %w", e.Name(), err)
			}
			var cc v1alpha1.ConnectCluster
			if err := yaml.Unmarshal(doc, &cc); err != nil {
				return nil, fmt.Errorf("sample %s: %w", e.Name(), err)
			}
			if cc.Kind == "ConnectCluster" && cc.Spec.Kafka.BootstrapServers != kafkaAddr {
				return nil, fmt.Errorf("sample %s: ConnectCluster %s still has bootstrapServers %q", e.Name(), cc.Name, cc.Spec.Kafka.BootstrapServers)
			}
		}
		out := filepath.Join(outDir, e.Name())
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return nil, err
		}
		files = append(files, out)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no YAML files in %s", src)
	}
	return files, nil
}

// WaitConnectorsRunning waits until the KafkaConnectors named (all of the namespace's when
// names is empty) and every task they report are RUNNING, and returns them.
func (cv *Conveyor) WaitConnectorsRunning(ctx context.Context, ns string, timeout time.Duration, names ...string) ([]v1alpha1.KafkaConnector, error) {
	var got []v1alpha1.KafkaConnector
	err := testkit.Until(ctx, timeout, fmt.Sprintf("connectors %v in %s to run", names, ns), func(ctx context.Context) (bool, error) {
		var list v1alpha1.KafkaConnectorList
		if err := cv.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		got = got[:0]
		var waiting []string
		for _, kc := range list.Items {
			if len(names) > 0 && !slices.Contains(names, kc.Name) {
				continue
			}
			got = append(got, kc)
			if why := notRunning(&kc); why != "" {
				waiting = append(waiting, kc.Name+": "+why)
			}
		}
		if len(got) == 0 || (len(names) > 0 && len(got) != len(names)) {
			return false, fmt.Errorf("found %d connectors", len(got))
		}
		if len(waiting) > 0 {
			return false, errors.New(strings.Join(waiting, "; "))
		}
		return true, nil
	})
	return got, err
}

func notRunning(kc *v1alpha1.KafkaConnector) string {
	st := kc.Status
	if st.State != v1alpha1.ConnectorStateRunning {
		return fmt.Sprintf("state %q", st.State)
	}
	if len(st.Tasks) == 0 || int32(len(st.Tasks)) != st.EffectiveTasks {
		return fmt.Sprintf("%d task statuses, %d effective tasks", len(st.Tasks), st.EffectiveTasks)
	}
	for _, t := range st.Tasks {
		if t.State != v1alpha1.ConnectorStateRunning {
			return fmt.Sprintf("task %d %s", t.ID, t.State)
		}
	}
	return ""
}

// WorkerPods returns the pods of a ConnectCluster (by its status.selector) that are not
// being deleted, and the cluster.
func (cv *Conveyor) WorkerPods(ctx context.Context, ns, name string) ([]corev1.Pod, *v1alpha1.ConnectCluster, error) {
	var cc v1alpha1.ConnectCluster
	if err := cv.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cc); err != nil {
		return nil, nil, fmt.Errorf("reading ConnectCluster %s/%s: %w", ns, name, err)
	}
	if cc.Status.Selector == "" {
		return nil, &cc, fmt.Errorf("ConnectCluster %s/%s has no status.selector yet", ns, name)
	}
	list, err := cv.Cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cc.Status.Selector})
	if err != nil {
		return nil, &cc, fmt.Errorf("listing the pods of %s/%s: %w", ns, name, err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, &cc, nil
}

// WaitWorkersReady waits until a ConnectCluster runs n Ready worker pods (n <= 0: its
// Deployment's replica count) and returns them.
func (cv *Conveyor) WaitWorkersReady(ctx context.Context, ns, name string, n int, timeout time.Duration) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := testkit.Until(ctx, timeout, fmt.Sprintf("the workers of %s/%s to be Ready", ns, name), func(ctx context.Context) (bool, error) {
		all, cc, err := cv.WorkerPods(ctx, ns, name)
		if err != nil {
			return false, err
		}
		want := n
		if want <= 0 {
			want = int(cc.Status.Replicas)
		}
		pods = pods[:0]
		var states []string
		for _, p := range all {
			states = append(states, p.Name+":"+string(p.Status.Phase))
			if p.Status.Phase == corev1.PodRunning && PodReady(&p) {
				pods = append(pods, p)
			}
		}
		return want > 0 && len(pods) == want && len(all) == want, fmt.Errorf("want %d ready, pods %v", want, states)
	})
	return pods, err
}

// RestToken returns the bearer token of a ConnectCluster's REST API (from the Secret the
// operator generates, or the one spec.restApi names).
func (cv *Conveyor) RestToken(ctx context.Context, cc *v1alpha1.ConnectCluster) (string, error) {
	ref := cc.RestTokenSecret()
	s, err := cv.Cluster.Client.CoreV1().Secrets(cc.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the REST token Secret %s/%s: %w", cc.Namespace, ref.Name, err)
	}
	return string(s.Data[ref.Key]), nil
}

// RestGet reads path from the Kafka Connect REST API of the worker at podIP (port 8083, the
// bearer token given) into out, through Cluster.DialContext.
func (c *Cluster) RestGet(ctx context.Context, podIP, token, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:%d%s", podIP, v1alpha1.RestPort, path), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
