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
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/kafkaconnector"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
	"github.com/conveyor-dev/conveyor/runtime/worker"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
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
	k8s   client.Client
	kafka *kfake.Cluster
	// bootstrap is the kfake listen address.
	bootstrap string
	// restURL is the worker's REST base URL.
	restURL string
	// outDir holds the FileSink outputs; it outlives every test, as
	// connectors keep running across tests.
	outDir string
	// writes counts the operator's REST writes per connector.
	writes = &writeCounter{counts: map[string]int{}, created: map[string]string{}}
)

func TestMain(m *testing.M) {
	os.Exit(envkit.Main(m, envkit.Options{KEDA: true}, func(e *envkit.Env) (err error) {
		k8s = e.Client
		if outDir, err = e.TempDir("conveyor-kc-out-"); err != nil {
			return err
		}
		if kafka, err = kfake.NewCluster(kfake.NumBrokers(1)); err != nil {
			return fmt.Errorf("starting kfake: %w", err)
		}
		e.DeferFunc(kafka.Close)
		bootstrap = kafka.ListenAddrs()[0]
		w, stopWorker, err := startWorker()
		if err != nil {
			return fmt.Errorf("starting the worker: %w", err)
		}
		e.DeferFunc(stopWorker)
		restURL = "http://" + w.RESTAddr()
		_, err = e.StartManager(nil, ctrl.Options{}, func(mgr ctrl.Manager) error {
			opts := envkit.OperatorOptions()
			opts.KEDACheckInterval = time.Second
			opts.WorkerResolver = workerclient.StaticResolver{restURL}
			// Short: runtime-side changes (task limits, states) show within
			// seconds instead of the production 30s.
			opts.ConnectorResync = connectorResync
			// Drift reverts 2s, 4s, 8s apart (production: 30s up to 10m).
			opts.DriftBackoff = kafkaconnector.Backoff{Initial: driftBackoff, Factor: 2, Max: 4 * driftBackoff, ResetAfter: time.Minute}
			opts.ConnectCluster.ConnectorScanInterval = connectorResync
			opts.WorkerClient = workerclient.Options{
				HTTPClient:     &http.Client{Transport: writes, Timeout: 10 * time.Second},
				RequestTimeout: 10 * time.Second,
			}
			return controllers.Setup(mgr, opts)
		})
		return err
	}))
}

// startWorker starts one real worker against kfake with the internal topics
// of the ConnectCluster the tests create.
func startWorker() (*worker.Worker, func(), error) {
	return envkit.StartWorker(envkit.WorkerSpec{
		Bootstrap: bootstrap,
		Cluster: &v1alpha1.ConnectCluster{Spec: v1alpha1.ConnectClusterSpec{GroupID: ptr(groupID),
			Storage: v1alpha1.StorageSpec{ReplicationFactor: ptr[int32](1),
				OffsetPartitions: ptr(storagePartitions), StatusPartitions: ptr(storagePartitions)}}},
		RestToken: restToken,
	})
}

// writeCounter is the operator's HTTP transport: it counts every request
// that changes a connector (anything but GET under /connectors/) by
// connector name, the reads of /connectors/{c}/topics under "{c}/topics"
// (a pass on a changed KafkaConnector reads them after every write it may
// make, so a new topics read marks a finished pass), every GET under
// /connectors/{c} under "{c}/reads" and the whole-cluster reads (GET
// /connectors?expand=...) under "expand". Config writes (PUT .../config)
// count under "{c}/config" too, offsets changes (PATCH or DELETE
// .../offsets) under "{c}/offsets".
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int
	// created is the initial_state of each POST /connectors, by name.
	created map[string]string
	// held: the requests about these connectors wait (hold).
	held map[string]*heldRequests
}

// heldRequests are the operator's requests about one connector that wait.
type heldRequests struct {
	// waiting gets the path of each request as it starts to wait.
	waiting chan string
	release chan struct{}
}

// hold makes the operator's requests about connector name wait until the
// returned release is called, and returns a channel that names each one as
// it starts waiting: a reconcile of that connector is held in the middle.
func (c *writeCounter) hold(name string) (waiting <-chan string, release func()) {
	h := &heldRequests{waiting: make(chan string, 16), release: make(chan struct{})}
	c.mu.Lock()
	if c.held == nil {
		c.held = map[string]*heldRequests{}
	}
	c.held[name] = h
	c.mu.Unlock()
	return h.waiting, func() {
		c.mu.Lock()
		delete(c.held, name)
		c.mu.Unlock()
		close(h.release)
	}
}

func (c *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.URL.Path == "/connectors" && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			var create connectapi.CreateConnectorRequest
			if json.NewDecoder(body).Decode(&create) == nil {
				c.mu.Lock()
				c.created[create.Name] = string(create.InitialState)
				c.mu.Unlock()
			}
		}
	}
	if name, ok := connectorOf(req); ok {
		key := ""
		switch {
		case req.Method != http.MethodGet:
			key = name
		case strings.HasSuffix(req.URL.Path, "/topics"):
			key = name + "/topics"
		case name == "" && req.URL.Query().Has("expand"):
			key = "expand" // a whole-cluster read
		}
		if req.Method == http.MethodGet && name != "" {
			c.mu.Lock()
			c.counts[name+"/reads"]++ // every per-connector read
			c.mu.Unlock()
		}
		also := ""
		switch {
		case req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/config"):
			also = name + "/config"
		case req.Method != http.MethodGet && strings.HasSuffix(req.URL.Path, "/offsets"):
			also = name + "/offsets"
		}
		c.mu.Lock()
		if key != "" {
			c.counts[key]++
		}
		if also != "" {
			c.counts[also]++
		}
		h := c.held[name]
		c.mu.Unlock()
		if h != nil && name != "" {
			select {
			case h.waiting <- req.Method + " " + req.URL.Path:
			default:
			}
			select {
			case <-h.release:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
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

// createdState is the initial_state the operator created name with.
func (c *writeCounter) createdState(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.created[name]
}

func (c *writeCounter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[name]
}

func ptr[T any](v T) *T { return &v }
