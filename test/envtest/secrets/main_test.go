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
// Package secrets tests connector Secrets end to end: a real kube-apiserver
// (envtest, RBAC on), the operator's reconcilers as controllers.Setup wires
// them running as a user that holds exactly the generated ClusterRole
// (config/rbac/role.yaml), an in-process Kafka (kfake) and real in-process
// Conveyor workers whose ${secret:...} provider reads Secrets from the API
// server with a real ServiceAccount token of the cluster's workers. The
// operator's and the workers' logs are captured so the tests can search them.
package secrets

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/workerclient"
	"github.com/conveyor-dev/conveyor/runtime/configprovider"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

// operatorUser is the identity the operator runs as: it holds the generated
// ClusterRole and nothing else.
const operatorUser = "conveyor-operator"

// storagePartitions is the partition count of the offset and status topics,
// the same for the workers and their ConnectClusters.
const storagePartitions int32 = 2

// connectorResync is the operator's runtime re-read interval here (30s in
// production): short, so runtime-side changes show quickly.
const connectorResync = 2 * time.Second

// maxLogVerbosity is the operator's log verbosity in these tests.
const maxLogVerbosity = 7

var (
	// k8s is an admin client for the tests' own reads and writes.
	k8s client.Client
	// apiConfig is the admin rest.Config (API server address and CA).
	apiConfig *rest.Config
	bootstrap string
	outDir    string
	// operatorLog and workerLog hold everything the operator and the
	// workers logged, at their most verbose levels.
	operatorLog, workerLog = &testkit.SyncBuffer{}, &testkit.SyncBuffer{}
	// calls counts the operator's REST requests by method and path.
	calls = &callCounter{counts: map[string]int{}}
	// workers are the in-process workers by ConnectCluster ("ns/name").
	workers = map[string]*testWorker{}
)

func TestMain(m *testing.M) {
	var logOut io.Writer = operatorLog
	if os.Getenv("CONVEYOR_TEST_VERBOSE") != "" {
		logOut = io.MultiWriter(operatorLog, os.Stderr)
	}
	// V(7): every level the operator's own code and controller-runtime use.
	// From V(8) on, client-go dumps the body of every API response (as
	// kubectl -v=8 does), Secrets included: a wire trace, not a log level to
	// run an operator at.
	logger := zap.New(zap.WriteTo(logOut), zap.UseDevMode(true), zap.Level(zapcore.Level(-maxLogVerbosity)))
	os.Exit(envkit.Main(m, envkit.Options{Logger: &logger}, func(e *envkit.Env) (err error) {
		k8s, apiConfig = e.Client, e.Config
		if outDir, err = e.TempDir("conveyor-secrets-out-"); err != nil {
			return err
		}
		opCfg, err := e.OperatorConfig(operatorUser)
		if err != nil {
			return err
		}
		kafka, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return fmt.Errorf("starting kfake: %w", err)
		}
		e.DeferFunc(kafka.Close)
		bootstrap = kafka.ListenAddrs()[0]
		for _, c := range []struct{ ns, name string }{{nsA, clusterA}, {nsB, clusterB}} {
			w, err := startWorker(c.ns, c.name)
			if err != nil {
				return fmt.Errorf("starting the worker of %s/%s: %w", c.ns, c.name, err)
			}
			e.DeferFunc(w.stop)
			workers[c.ns+"/"+c.name] = w
		}
		_, err = e.StartManager(opCfg, ctrl.Options{}, func(mgr ctrl.Manager) error {
			opts := envkit.OperatorOptions()
			opts.KEDACheckInterval = time.Minute
			opts.WorkerResolver = workerclient.ResolverFunc(func(_ context.Context, cc *v1alpha1.ConnectCluster) ([]string, error) {
				w, ok := workers[cc.Namespace+"/"+cc.Name]
				if !ok {
					return nil, fmt.Errorf("no test worker for ConnectCluster %s/%s", cc.Namespace, cc.Name)
				}
				return []string{w.url}, nil
			})
			opts.WorkerClient = workerclient.Options{
				HTTPClient:     &http.Client{Transport: calls, Timeout: 10 * time.Second},
				RequestTimeout: 10 * time.Second,
			}
			opts.ConnectorResync = connectorResync
			return controllers.Setup(mgr, opts)
		})
		return err
	}))
}

// testWorker is one in-process worker of a ConnectCluster.
type testWorker struct {
	url string
	// tokenFile is where its ServiceAccount token goes (setToken).
	tokenFile string
	// secrets is its ${secret:...} provider, for the tests' own RBAC checks.
	secrets *configprovider.SecretProvider
	stop    func()
}

// groupOf is the Connect group of a test cluster.
func groupOf(ns, name string) string { return "secrets-" + ns + "-" + name }

// startWorker starts one real worker of the ConnectCluster ns/name against
// kfake, with a Secret provider that reads Secrets of ns from the API
// server with the token in its token file (the ServiceAccount token arrives
// once the operator created the account: ensureCluster).
func startWorker(ns, name string) (*testWorker, error) {
	dir, err := os.MkdirTemp("", "conveyor-secrets-sa-")
	if err != nil {
		return nil, err
	}
	saTokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(saTokenFile, nil, 0o600); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(apiConfig.CAData) {
		return nil, fmt.Errorf("the envtest API server's CA is not PEM")
	}
	host := apiConfig.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	secrets := &configprovider.SecretProvider{
		BaseURL:   host,
		Namespace: ns,
		TokenFile: saTokenFile,
		Client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}},
	}
	var out io.Writer = workerLog
	if os.Getenv("CONVEYOR_TEST_VERBOSE") != "" {
		out = io.MultiWriter(workerLog, os.Stderr)
	}
	w, stop, err := envkit.StartWorker(envkit.WorkerSpec{
		Bootstrap: bootstrap,
		Cluster:   clusterObject(ns, name),
		RestToken: restToken,
		Logger:    slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug})).With("worker", ns+"/"+name),
		Resolver:  distributedResolver(secrets, clusterObject(ns, name)),
	})
	if err != nil {
		return nil, err
	}
	return &testWorker{url: "http://" + w.RESTAddr(), tokenFile: saTokenFile, secrets: secrets, stop: func() {
		stop()
		os.RemoveAll(dir)
	}}, nil
}

// callCounter is the operator's HTTP transport to the workers: it counts
// every request as "METHOD /path" and, with a query, as "METHOD /path?query"
// too.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *callCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.counts[req.Method+" "+req.URL.Path]++
	if req.URL.RawQuery != "" {
		c.counts[req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery]++
	}
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (c *callCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

// restarts counts the operator's POST /connectors/{name}/restart.
func restarts(name string) int { return calls.get("POST /connectors/" + name + "/restart") }
