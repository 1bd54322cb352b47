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

package envkit

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"go.uber.org/zap/zapcore"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/connectcluster"
)

// Options says what a suite's API server needs.
type Options struct {
	// Binaries are the test binaries the suite runs beyond etcd and
	// kube-apiserver (kubectl, kube-controller-manager).
	Binaries []string
	// KEDA installs KEDA's ScaledObject and TriggerAuthentication CRDs with
	// the repository's, and adds KEDA's types to the scheme.
	KEDA bool
	// KEDATypes adds KEDA's types to the scheme without installing the CRDs
	// (suites that install them later).
	KEDATypes bool
	// Logger is the controller-runtime logger; when nil, errors go to
	// stderr (everything, with CONVEYOR_TEST_VERBOSE set).
	Logger *logr.Logger
}

// Env is a running API server with the repository's CRDs.
type Env struct {
	Env    *envtest.Environment
	Assets string
	// Config and Client are an admin's.
	Config *rest.Config
	Client client.Client
	Scheme *k8sruntime.Scheme

	cleanups []func() error
}

// Main is a suite's TestMain: it starts the API server, calls setup (which
// registers its clean-ups with Defer), runs the tests, then runs the
// clean-ups (last registered first) and stops the API server. It returns
// the exit code: os.Exit(envkit.Main(m, opts, setup)).
func Main(m *testing.M, opts Options, setup func(e *Env) error) (code int) {
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	if setup != nil {
		if err := setup(e); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// Start starts an API server with the repository's CRDs (and KEDA's when
// asked) and an admin client. Stop stops it.
func Start(opts Options) (*Env, error) {
	assets, err := Assets(opts.Binaries...)
	if err != nil {
		return nil, err
	}
	if opts.Logger != nil {
		ctrl.SetLogger(*opts.Logger)
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(logLevel())))
	}
	scheme := k8sruntime.NewScheme()
	adds := []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme}
	if opts.KEDA || opts.KEDATypes {
		adds = append(adds, kedav1alpha1.AddToScheme)
	}
	for _, add := range adds {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	env := Environment(assets, scheme)
	// A loaded machine (make test runs beside other work) can take longer
	// than envtest's default 20s to start the API server.
	env.ControlPlaneStartTimeout = time.Minute
	if opts.KEDA {
		dir, err := KEDACRDDir()
		if err != nil {
			return nil, err
		}
		env.CRDInstallOptions = envtest.CRDInstallOptions{Paths: []string{
			filepath.Join(dir, "keda.sh_scaledobjects.yaml"),
			filepath.Join(dir, "keda.sh_triggerauthentications.yaml"),
		}}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest with KUBEBUILDER_ASSETS=%s: %w", assets, err)
	}
	e := &Env{Env: env, Assets: assets, Config: cfg, Scheme: scheme}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, errors.Join(fmt.Errorf("creating a client: %w", err), env.Stop())
	}
	return e, nil
}

// Defer registers a clean-up that Stop runs, last registered first.
func (e *Env) Defer(f func() error) { e.cleanups = append(e.cleanups, f) }

// DeferFunc is Defer for a clean-up that cannot fail.
func (e *Env) DeferFunc(f func()) { e.Defer(func() error { f(); return nil }) }

// Stop runs the clean-ups and stops the API server.
func (e *Env) Stop() error {
	var errs []error
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, e.cleanups[i]())
	}
	e.cleanups = nil
	if err := e.Env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stopping envtest: %w", err))
	}
	return errors.Join(errs...)
}

// StartManager creates a manager on cfg (the admin's when nil) with the
// env's scheme, metrics and health probes off and controller names free
// to repeat, lets setup register reconcilers on it, starts it and waits for
// its cache; Stop stops it. opts may set the cache and the like.
func (e *Env) StartManager(cfg *rest.Config, opts ctrl.Options, setup func(ctrl.Manager) error) (ctrl.Manager, error) {
	if cfg == nil {
		cfg = e.Config
	}
	opts.Scheme = e.Scheme
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	skip := true
	opts.Controller = config.Controller{SkipNameValidation: &skip}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := setup(mgr); err != nil {
		return nil, fmt.Errorf("setting up reconcilers: %w", err)
	}
	stop, err := StartManager(mgr)
	if err != nil {
		return nil, err
	}
	e.Defer(stop)
	return mgr, nil
}

// TempDir makes a folder that Stop removes.
func (e *Env) TempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	e.Defer(func() error { return os.RemoveAll(dir) })
	return dir, nil
}

func logLevel() zapcore.Level {
	if os.Getenv("CONVEYOR_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// Namespaces names the namespaces of a suite whose operator watches a fixed
// list (--watch-namespaces): each base name gets one namespace per run of
// the tests, "<base>-<run>", for as many runs as -count asks, so a second
// run never meets the namespaces of the first (envtest has no namespace
// controller: a deleted namespace never goes away).
type Namespaces struct {
	mu    sync.Mutex
	bases []string
	runs  int
	used  map[string]int
}

// NewNamespaces plans the namespaces of bases. Call it from TestMain (it
// reads -count, parsing the flags if the testing package has not yet).
func NewNamespaces(bases ...string) *Namespaces {
	if !flag.Parsed() {
		flag.Parse()
	}
	runs := 1
	if f := flag.Lookup("test.count"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 1 {
			runs = n
		}
	}
	return &Namespaces{bases: bases, runs: runs, used: map[string]int{}}
}

// All is every namespace of every run, for the manager's cache.
func (n *Namespaces) All() []string {
	var out []string
	for _, b := range n.bases {
		for r := 1; r <= n.runs; r++ {
			out = append(out, b+"-"+strconv.Itoa(r))
		}
	}
	return out
}

// Next is the namespace of base for this run of a test. A base that is not
// planned (a namespace the operator must not watch) is numbered the same
// way and stays outside All.
func (n *Namespaces) Next(base string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	planned := false
	for _, b := range n.bases {
		planned = planned || b == base
	}
	if planned && n.used[base] >= n.runs {
		return "", fmt.Errorf("namespace %q is used by more runs than -count=%d planned", base, n.runs)
	}
	n.used[base]++
	return base + "-" + strconv.Itoa(n.used[base]), nil
}

// OperatorOptions are the operator's options in a suite: a test image,
// short Kafka timeouts and retries, and a topic re-check of 10 minutes, so
// that what a test waits for must come through the watches. Suites change
// what they need.
func OperatorOptions() controllers.Options {
	return controllers.Options{
		WorkerImage:       "ghcr.io/conveyor-dev/conveyor:test",
		OperatorNamespace: "conveyor-system",
		ConnectCluster: connectcluster.Options{
			KafkaTimeout:         2 * time.Second,
			TopicRecheckInterval: 10 * time.Minute,
			RetryBase:            200 * time.Millisecond,
			RetryMax:             2 * time.Second,
		},
	}
}
