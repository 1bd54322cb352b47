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

// Package localcluster runs a small but real Kubernetes cluster on this machine, without
// Docker: etcd, kube-apiserver and kube-controller-manager from the hack/ binaries, one Node,
// a "process kubelet" that runs the containers of pods whose image maps to a local folder
// of binaries as local processes (each in its own mount namespace, with its volumes, its
// ServiceAccount token and its own loopback address), and a standalone Kafka broker (kfake
// in its own process). End-to-end tests and `make dev` build on it; Conveyor (conveyor.go)
// installs the Helm chart and applies config/samples on it with the real helm and kubectl.
//
// Start needs root (mount namespaces and bind mounts) and the Kubernetes test binaries.
//
// How a pod runs: the kubelet binds it to the Node (no scheduler), gives it 127.X.Y.N,
// renders its ConfigMap, Secret, downward API, projected (TokenRequest tokens bound to the
// pod) and emptyDir volumes into Dir/pods/ (group-owned by the pod's fsGroup, as the
// kubelet does), and starts each container as
// `unshare -m --propagation private -- bash -c initScript`: the image folder appears
// read-only at /usr/local/bin, volumes are bind-mounted at their mountPaths, then the command
// runs (as runAsUser via setpriv when set) with the container's env plus
// KUBERNETES_SERVICE_HOST/PORT and POD_IP, stdout and stderr in
// Dir/logs/<namespace>_<pod>_<container>.log. Probes, restart policy with back-off, init
// containers, grace periods on deletion and pod status are the kubelet's.
//
// With Options.NetNS the whole cluster runs in a network namespace of its own, pods get
// routable 10.200.1.N addresses, Services get endpoints and aggregated APIs work, so KEDA
// (Options.KEDA) runs as in a real cluster; see netns.go and keda.go.
//
// Known limits, by design or by the API server's rules:
//   - Without NetNS, Services get no endpoints: the API server refuses loopback addresses in
//     EndpointSlices ("may not be in the loopback range"). There is no kube-proxy (no
//     ClusterIPs) and no DNS in either mode. Reach pods by their IPs (status.podIP).
//   - Pods share one network namespace (the machine's, or the cluster's with NetNS), so two
//     pods may not listen on the same port of every address: listen on the pod IP.
//   - A mount point missing on the host (such as /var/run/secrets/kubernetes.io/serviceaccount)
//     is created there as an empty folder and left in place; nothing is written into it.
//   - readOnlyRootFilesystem makes the root mount read-only inside the pod; other host mounts
//     (/dev, /proc, a separate /tmp) stay writable. Resource limits are not enforced.
//   - gRPC probes, lifecycle hooks (postStart, preStop), ephemeral containers and
//     sidecar init containers (restartPolicy: Always) are not supported (one would block the pod).
//   - runAsNonRoot without runAsUser runs as 65532, the Conveyor image's USER.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DefaultConveyorImage is the image name prefix of Conveyor's own image (operator and worker).
const DefaultConveyorImage = "ghcr.io/conveyor-dev/conveyor"

// Options configure a local cluster. The zero value works when KUBEBUILDER_ASSETS is set
// (or `hack/build-test-binaries.sh` can run) and the caller runs inside the module.
type Options struct {
	// Dir holds everything the cluster writes: kubeconfig, logs, pod folders, Kafka data.
	// Empty: a new temporary folder (removed by Stop).
	Dir string
	// AssetsDir holds etcd, kube-apiserver, kube-controller-manager and kubectl.
	// Empty: $KUBEBUILDER_ASSETS, else the folder `hack/build-test-binaries.sh k8s` prints.
	AssetsDir string
	// Images maps an image name prefix (matched up to a ':' or '@' boundary, the longest
	// prefix wins) to a local folder holding that image's binaries. A container whose image
	// matches runs `Dir/basename(command[0])` with its args; other pods are bound to the node
	// but stay Pending with the reason ImageNotMapped.
	Images map[string]string
	// Entrypoints gives the command for a mapped image when a container has no command
	// (the image's ENTRYPOINT), keyed like Images. Default for DefaultConveyorImage:
	// ["/usr/local/bin/conveyor"].
	Entrypoints map[string][]string
	// PodIPPrefix is the first three octets of the pods' loopback addresses, e.g. "127.0.0.".
	// Empty: a random "127.X.Y." so that several clusters on one machine do not collide
	// ("10.200.1." with NetNS).
	PodIPPrefix string
	// NodeName is the name of the one Node. Default "localcluster".
	NodeName string
	// Controllers replaces the kube-controller-manager controller list (DefaultControllers).
	Controllers []string
	// KafkaBinary is a prebuilt test/localcluster/cmd/kafka; empty builds it with `go build`.
	KafkaBinary string
	// KafkaPort is the broker port; 0 picks a free one.
	KafkaPort int
	// NoKafka skips the Kafka broker.
	NoKafka bool
	// SecureKafka, when set, starts a second broker that speaks only TLS (client
	// certificates required) and SASL/SCRAM-SHA-512 (Cluster.SecureKafka); needs Kafka.
	SecureKafka *SecureKafkaOptions
	// NetNS runs the whole cluster inside a network namespace that it creates (see
	// netns.go): pods get routable 10.200.1.N addresses, Services get endpoints, and the
	// API server serves aggregated APIs (KEDA's metrics server). The API server, etcd and
	// Kafka stay reachable on 127.0.0.1 from the machine's namespace through forwarded
	// ports; pods only through Cluster.DialContext and Cluster.Forward. PodIPPrefix must be
	// empty.
	NetNS bool
	// KEDA installs KEDA (KEDAVersion): its CRDs, its operator and its metrics API server
	// as pods, and the APIService v1beta1.external.metrics.k8s.io; Start returns once that
	// APIService is Available. Needs NetNS (the API server cannot reach a loopback pod).
	KEDA bool
	// KEDADir holds keda-operator, keda-adapter and crd/; empty runs hack/build-keda.sh.
	KEDADir string
	// SharedEmptyDirs maps a volume name to a host folder: an emptyDir volume of that name,
	// in any pod, is that one folder (a stand-in for a ReadWriteMany PersistentVolumeClaim,
	// which the process kubelet cannot provide), so what pods wrote there outlives them.
	SharedEmptyDirs map[string]string
	// RestartBackoff is the delay before the second restart of a crashed container; it doubles
	// up to 5 minutes like the kubelet's. The first restart is immediate. Default 10s.
	RestartBackoff time.Duration
	// ShutdownGrace is how long Stop lets pod processes exit after SIGTERM. Default 3s.
	ShutdownGrace time.Duration
	// Log receives progress lines. Nil discards them (they are in Dir/logs/localcluster.log too).
	Log io.Writer
}

// DefaultControllers are the kube-controller-manager controllers a local cluster runs.
var DefaultControllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller", "job-controller",
	"garbage-collector-controller", "endpointslice-controller", "endpoints-controller",
	"serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller",
	"disruption-controller", "clusterrole-aggregation-controller",
	"horizontal-pod-autoscaler-controller",
}

// Cluster is a running local cluster. Stop it with Stop.
type Cluster struct {
	// Dir is the cluster's folder.
	Dir string
	// Kubeconfig is the path of an admin (system:masters) kubeconfig.
	Kubeconfig string
	// Config is the admin REST config; Client a clientset built from it.
	Config *rest.Config
	Client kubernetes.Interface
	// APIServerHost and APIServerPort are what pods see as KUBERNETES_SERVICE_HOST/PORT.
	APIServerHost, APIServerPort string
	// KafkaAddr is the broker's host:port ("" with NoKafka).
	KafkaAddr string
	// SecureKafka is the TLS and SASL broker of Options.SecureKafka (nil without).
	SecureKafka *SecureKafka
	// NodeName is the Node the process kubelet runs pods on; PodIPPrefix the pods' address
	// prefix; HostIP the Node's address.
	NodeName, PodIPPrefix, HostIP string
	// AssetsDir is where etcd, kube-apiserver, kube-controller-manager and kubectl live.
	AssetsDir string

	opts    Options
	ownDir  bool
	logf    func(format string, args ...any)
	logFile *os.File
	cp      *controlPlane
	kubelet *kubelet
	kafka   *kafkaProcess
	// secureKafka is the process behind SecureKafka.
	secureKafka *kafkaProcess
	netns       *netNS
	stopOnce    sync.Once
	stopErr     error
	cancelRun   context.CancelFunc
}

// Start brings up a local cluster: control plane, Node, process kubelet and Kafka. It
// returns once the API server answers, the default ServiceAccount exists and Kafka listens.
func Start(ctx context.Context, opts Options) (_ *Cluster, retErr error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("localcluster needs root (mount namespaces for pod processes)")
	}
	c := &Cluster{opts: opts}
	if c.opts.Dir == "" {
		d, err := os.MkdirTemp("", "localcluster-")
		if err != nil {
			return nil, fmt.Errorf("creating cluster folder: %w", err)
		}
		c.opts.Dir, c.ownDir = d, true
	}
	dir, err := filepath.Abs(c.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("resolving Options.Dir: %w", err)
	}
	c.Dir = dir
	for _, sub := range []string{"logs", "pods", "bin"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", sub, err)
		}
	}
	c.logFile, err = os.OpenFile(filepath.Join(dir, "logs", "localcluster.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log: %w", err)
	}
	var logMu sync.Mutex
	c.logf = func(format string, args ...any) {
		line := time.Now().Format("15:04:05.000 ") + fmt.Sprintf(format, args...) + "\n"
		logMu.Lock()
		defer logMu.Unlock()
		_, _ = io.WriteString(c.logFile, line)
		if c.opts.Log != nil {
			_, _ = io.WriteString(c.opts.Log, "localcluster: "+line[13:])
		}
	}
	defer func() {
		if retErr != nil {
			_ = c.Stop()
		}
	}()
	if c.opts.NodeName == "" {
		c.opts.NodeName = "localcluster"
	}
	c.NodeName = c.opts.NodeName
	if c.opts.NetNS {
		if c.opts.PodIPPrefix != "" {
			return nil, fmt.Errorf("Options.PodIPPrefix %q: leave it empty with NetNS (pods get %sN)", c.opts.PodIPPrefix, netnsPodIPs)
		}
		c.netns, err = startNetNS(ctx, c.logf)
		if err != nil {
			return nil, err
		}
		c.PodIPPrefix, c.HostIP = netnsPodIPs, netnsHostIP
	} else if c.opts.PodIPPrefix == "" {
		c.opts.PodIPPrefix = fmt.Sprintf("127.%d.%d.", 1+rand.IntN(250), 1+rand.IntN(250))
	}
	if p := c.opts.PodIPPrefix; c.netns == nil && (!strings.HasPrefix(p, "127.") || strings.Count(p, ".") != 3 || !strings.HasSuffix(p, ".")) {
		return nil, fmt.Errorf("Options.PodIPPrefix %q: want three loopback octets with a trailing dot, like \"127.0.0.\"", c.opts.PodIPPrefix)
	}
	if c.netns == nil {
		c.PodIPPrefix, c.HostIP = c.opts.PodIPPrefix, hostIP
	}
	if c.opts.RestartBackoff == 0 {
		c.opts.RestartBackoff = 10 * time.Second
	}
	if c.opts.ShutdownGrace == 0 {
		c.opts.ShutdownGrace = 3 * time.Second
	}
	if len(c.opts.Controllers) == 0 {
		c.opts.Controllers = DefaultControllers
	}
	if c.opts.Entrypoints == nil {
		c.opts.Entrypoints = map[string][]string{}
	}
	if _, ok := c.opts.Entrypoints[DefaultConveyorImage]; !ok {
		c.opts.Entrypoints[DefaultConveyorImage] = []string{"/usr/local/bin/conveyor"}
	}
	if c.opts.KEDA {
		if !c.opts.NetNS {
			return nil, errors.New("Options.KEDA needs Options.NetNS: the API server reaches KEDA's metrics server at a pod address, and EndpointSlices refuse loopback ones")
		}
		if c.opts.KEDADir == "" {
			if c.opts.KEDADir, err = BuildKEDA(ctx, os.Stderr); err != nil {
				return nil, err
			}
		}
		images := map[string]string{KEDAImage: c.opts.KEDADir}
		for k, v := range c.opts.Images {
			images[k] = v
		}
		c.opts.Images = images
	}
	for prefix, folder := range c.opts.Images {
		if st, err := os.Stat(folder); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("Options.Images[%q] = %q: not a folder (want the folder holding the image's binaries)", prefix, folder)
		}
	}

	c.AssetsDir, err = findAssets(ctx, c.opts.AssetsDir)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancelRun = cancel

	// Kafka first: it builds a binary, which overlaps nicely with nothing else but is
	// independent of the control plane.
	kafkaErr := make(chan error, 1)
	if c.opts.NoKafka && c.opts.SecureKafka != nil {
		return nil, errors.New("Options.SecureKafka needs Kafka: leave NoKafka false")
	}
	if !c.opts.NoKafka {
		go func() {
			k, err := startKafka(ctx, c.Dir, "kafka", c.opts.KafkaBinary, c.opts.KafkaPort, nil, c.netns, c.logf)
			c.kafka = k
			if err == nil && c.opts.SecureKafka != nil {
				err = c.startSecureKafka(ctx, k.bin)
			}
			kafkaErr <- err
		}()
	} else {
		kafkaErr <- nil
	}

	c.logf("starting etcd and kube-apiserver from %s", c.AssetsDir)
	c.cp, err = startControlPlane(ctx, c.Dir, c.AssetsDir, c.opts.Controllers, c.netns, c.logf)
	if kerr := <-kafkaErr; kerr != nil && err == nil {
		err = kerr
	}
	if err != nil {
		return nil, err
	}
	if c.kafka != nil {
		c.KafkaAddr = c.kafka.addr
	}
	c.Config, c.Client, c.Kubeconfig = c.cp.adminConfig, c.cp.client, c.cp.kubeconfig
	c.APIServerHost, c.APIServerPort = c.cp.host, c.cp.port

	c.kubelet, err = newKubelet(kubeletConfig{
		client:      c.Client,
		nodeName:    c.NodeName,
		podIPPrefix: c.PodIPPrefix,
		hostIP:      c.HostIP,
		netns:       c.netns,
		apiHost:     c.APIServerHost,
		apiPort:     c.APIServerPort,
		caPEM:       c.cp.caPEM,
		dir:         c.Dir,
		images:      c.opts.Images,
		entrypoints: c.opts.Entrypoints,
		sharedDirs:  c.opts.SharedEmptyDirs,
		backoff:     c.opts.RestartBackoff,
		shutdown:    c.opts.ShutdownGrace,
		logf:        c.logf,
	})
	if err != nil {
		return nil, err
	}
	if err := c.kubelet.start(runCtx); err != nil {
		return nil, err
	}
	if err := c.cp.waitDefaultServiceAccount(ctx, "default"); err != nil {
		return nil, err
	}
	if c.opts.KEDA {
		if err := c.installKEDA(ctx, c.opts.KEDADir); err != nil {
			return nil, err
		}
	}
	c.logf("cluster up: kubeconfig %s, kafka %s, pods on %sN", c.Kubeconfig, c.KafkaAddr, c.PodIPPrefix)
	return c, nil
}

// Stop kills every pod process (SIGTERM, ShutdownGrace, SIGKILL), then stops Kafka, the
// controller-manager, the API server and etcd. It removes Dir only when Start created it.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		if c.kubelet != nil {
			errs = append(errs, c.kubelet.stop())
		}
		if c.cancelRun != nil {
			c.cancelRun()
		}
		for _, k := range []*kafkaProcess{c.kafka, c.secureKafka} {
			if k != nil {
				errs = append(errs, k.stop())
			}
		}
		if c.cp != nil {
			errs = append(errs, c.cp.stop())
		}
		c.netns.stop()
		if c.logf != nil {
			c.logf("cluster stopped")
		}
		if c.logFile != nil {
			_ = c.logFile.Close()
		}
		if c.ownDir {
			errs = append(errs, os.RemoveAll(c.Dir))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// RestartKafka stops the broker process and starts it again on the same port and data
// folder, to show that topics and records survive.
func (c *Cluster) RestartKafka(ctx context.Context) error {
	if c.kafka == nil {
		return errors.New("this cluster runs no Kafka (Options.NoKafka)")
	}
	return c.kafka.restart(ctx)
}

// PodProcesses returns the process ids of every running container process.
func (c *Cluster) PodProcesses() []int {
	if c.kubelet == nil {
		return nil
	}
	return c.kubelet.pids()
}

// PodVolumeDir is the host folder behind a volume of a pod that runs on this cluster (an
// emptyDir's content, for instance); it goes away with the pod.
func (c *Cluster) PodVolumeDir(pod *corev1.Pod, volume string) string {
	return filepath.Join(podDir(c.Dir, pod), "volumes", volume)
}

// KEDA reports whether the cluster runs KEDA (Options.KEDA).
func (c *Cluster) KEDA() bool { return c.opts.KEDA }

// DialContext connects to an address as the cluster's processes see it: inside the
// cluster's network namespace with NetNS (pod addresses included), else a plain dial.
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return c.netns.DialContext(ctx, network, addr)
}

// HTTPClient is an HTTP client whose connections go through DialContext.
func (c *Cluster) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: c.DialContext}, Timeout: 30 * time.Second}
}

// Forward makes target (a pod's host:port) reachable on 127.0.0.1:port of the machine's own
// namespace (0: a free port) until the cluster stops, and returns that port. Without NetNS
// the pod is reachable as it is, and Forward returns an error.
func (c *Cluster) Forward(port int, target string) (int, error) {
	if c.netns == nil {
		return 0, errors.New("Forward needs a cluster with Options.NetNS: pod addresses are reachable directly")
	}
	return c.netns.listen(port, target)
}

// ForwardIn makes target (a host:port in the machine's own namespace, such as a
// PostgreSQL server a suite started) reachable from the pods of a cluster with
// Options.NetNS, and returns the address they dial. Without NetNS pods reach target as
// it is, and ForwardIn returns target.
func (c *Cluster) ForwardIn(target string) (string, error) {
	if c.netns == nil {
		return target, nil
	}
	return c.netns.listenIn(target)
}

// Kubectl returns the path of the kubectl binary next to the other assets.
func (c *Cluster) Kubectl() string { return filepath.Join(c.AssetsDir, "kubectl") }

func findAssets(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if dir == "" {
		root, err := ModuleRoot(ctx)
		if err != nil {
			return "", fmt.Errorf("finding Kubernetes test binaries: set Options.AssetsDir or KUBEBUILDER_ASSETS (%w)", err)
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-test-binaries.sh"), "k8s")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("running hack/build-test-binaries.sh k8s: %w", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("Kubernetes test binary %s missing in %s: run hack/build-test-binaries.sh k8s", b, dir)
		}
	}
	return dir, nil
}

// ModuleRoot returns the folder of the Conveyor module that the current directory is in.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the Conveyor module: run from the repository")
	}
	return filepath.Dir(gomod), nil
}

// BuildConveyorImage builds the image's two binaries, conveyor and conveyor-worker (with
// the build tags workerTags), into outDir, for Options.Images[DefaultConveyorImage].
func BuildConveyorImage(ctx context.Context, outDir string, workerTags ...string) error {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return err
	}
	if err := goBuild(ctx, root, filepath.Join(outDir, "conveyor"), "."); err != nil {
		return err
	}
	return goBuild(ctx, root, filepath.Join(outDir, "conveyor-worker"), "./runtime/cmd/conveyor-worker", workerTags...)
}

// goBuild runs `go build -o out pkg` in dir, with CGO off like the image's build. The
// flags are those of `go test` and `go vet` (no -trimpath, CGO_ENABLED=0): Go keys its
// build cache on them, so the binaries reuse every package the test tiers compiled (build
// tags change only the packages whose files they select).
func goBuild(ctx context.Context, dir, out, pkg string, tags ...string) error {
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}
