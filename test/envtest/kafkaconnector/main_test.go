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

// Package kafkaconnector tests the KafkaConnector reconciler end to end: a
// real kube-apiserver (envtest) with KEDA's CRDs, the operator's reconcilers
// as controllers.Setup wires them, an in-process Kafka (kfake) and one real
// in-process Conveyor worker whose REST API the operator drives.
package kafkaconnector

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/runtime/worker"
	"github.com/conveyor-dev/conveyor/test/envtest/envtestutil"
)

const (
	// groupID is the Connect group of the one ConnectCluster and its worker.
	groupID = "kc-envtest"
	// restToken is the worker's REST bearer token, also stored in the
	// Secret the ConnectCluster names.
	restToken = "envtest-rest-token-7f3a"
	// storagePartitions is the partition count of the offset and status
	// topics, the same for the worker and the ConnectCluster.
	storagePartitions int32 = 3
)

var (
	k8s    client.Client
	scheme = runtime.NewScheme()
	kafka  *kfake.Cluster
	// bootstrap is the kfake listen address.
	bootstrap string
	// restURL is the worker's REST base URL.
	restURL string
	// outDir holds the FileSink outputs; it outlives every test, as
	// connectors keep running across tests.
	outDir string
	// writes counts the operator's REST writes per connector.
	writes = &writeCounter{counts: map[string]int{}}
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) (code int) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(kedav1alpha1.AddToScheme(scheme))
	assets, err := envtestutil.Assets()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))

	kedaCRDs, err := envtestutil.KEDACRDDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := envtestutil.Environment(assets, scheme)
	env.CRDInstallOptions = envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(kedaCRDs, "keda.sh_scaledobjects.yaml"),
		filepath.Join(kedaCRDs, "keda.sh_triggerauthentications.yaml"),
	}}
	outDir, err = os.MkdirTemp("", "conveyor-kc-out-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating the output directory: %v\n", err)
		return 1
	}
	defer os.RemoveAll(outDir)
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()

	kafka, err = kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kfake: %v\n", err)
		return 1
	}
	defer kafka.Close()
	bootstrap = kafka.ListenAddrs()[0]

	w, stopWorker, err := startWorker()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the worker: %v\n", err)
		return 1
	}
	defer stopWorker()
	restURL = "http://" + w.RESTAddr()

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating the manager: %v\n", err)
		return 1
	}
	if err := controllers.Setup(mgr, controllers.Options{
		WorkerImage:       "ghcr.io/conveyor-dev/conveyor:test",
		OperatorNamespace: "conveyor-system",
		ConnectCluster: connectcluster.Options{
			KafkaTimeout: 2 * time.Second,
			// Long: the ScaledObject must follow connector changes through
			// the watch, not through the periodic topic re-check.
			TopicRecheckInterval: 10 * time.Minute,
			RetryBase:            200 * time.Millisecond,
			RetryMax:             2 * time.Second,
		},
		KEDACheckInterval: time.Second,
		WorkerResolver:    workerclient.StaticResolver{restURL},
		// Short: runtime-side changes (task limits, states) show within
		// seconds instead of the production 30s.
		ConnectorResync: connectorResync,
		WorkerClient: workerclient.Options{
			HTTPClient:     &http.Client{Transport: writes, Timeout: 10 * time.Second},
			RequestTimeout: 10 * time.Second,
		},
	}); err != nil {
		fmt.Fprintf(os.Stderr, "setting up reconcilers: %v\n", err)
		return 1
	}
	stopManager, err := envtestutil.StartManager(mgr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := stopManager(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a client: %v\n", err)
		return 1
	}
	return m.Run()
}

// startWorker starts one real worker against kfake with the internal topics
// of the ConnectCluster the tests create.
func startWorker() (*worker.Worker, func(), error) {
	return envtestutil.StartWorker(envtestutil.WorkerSpec{
		Bootstrap: bootstrap,
		Cluster: &v1alpha1.ConnectCluster{Spec: v1alpha1.ConnectClusterSpec{GroupID: ptr(groupID),
			Storage: v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1),
				OffsetPartitions: ptr(storagePartitions), StatusPartitions: ptr(storagePartitions)}}},
		RestToken: restToken,
	})
}

// writeCounter is the operator's HTTP transport: it counts every request
// that changes a connector (anything but GET under /connectors/) by
// connector name, and the reads of /connectors/{c}/topics under
// "{c}/topics": the reconciler reads them after every write it may make,
// so a new topics read marks a finished pass.
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if name, ok := connectorOf(req); ok {
		key := ""
		switch {
		case req.Method != http.MethodGet:
			key = name
		case strings.HasSuffix(req.URL.Path, "/topics"):
			key = name + "/topics"
		}
		if key != "" {
			c.mu.Lock()
			c.counts[key]++
			c.mu.Unlock()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// connectorOf names the connector a request is about: POST /connectors
// carries it in its body, which we do not read, so it counts as "" (create).
func connectorOf(req *http.Request) (string, bool) {
	p := strings.TrimPrefix(req.URL.Path, "/")
	if p == "connectors" {
		return "", true
	}
	rest, ok := strings.CutPrefix(p, "connectors/")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, "/")
	return name, true
}

func (c *writeCounter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[name]
}

func zapLevel() zapcore.Level {
	if os.Getenv("CONVEYOR_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

func ptr[T any](v T) *T { return &v }
