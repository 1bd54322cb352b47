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

// Command conveyor is the Conveyor operator and its developer commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	connectv1alpha1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/controllers/kafkaconnector"
)

const usage = `conveyor runs Kafka Connect-style clusters on Kubernetes.

Usage:
  conveyor operator [flags]   run the operator (controller manager)
  conveyor help               show this help

Run "conveyor operator --help" for the operator's flags.
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "conveyor:", err)
		}
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("a command is required")
	}
	switch args[0] {
	case "operator":
		return runOperator(args[1:], stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(connectv1alpha1.AddToScheme(s))
	utilruntime.Must(kedav1alpha1.AddToScheme(s))
	return s
}

func runOperator(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("conveyor operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	metricsAddr := fs.String("metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 disables it")
	metricsSecure := fs.Bool("metrics-secure", true, "serve metrics over HTTPS, only to callers that the API server authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview); false serves plain, open HTTP")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to")
	leaderElect := fs.Bool("leader-elect", false, "elect a leader so that only one operator replica reconciles")
	leader := controllers.DefaultLeaderTimings
	fs.DurationVar(&leader.LeaseDuration, "leader-elect-lease-duration", leader.LeaseDuration, "how long a leader's Lease lasts after its last renewal: after a crash, a standby waits up to this plus the retry period")
	fs.DurationVar(&leader.RenewDeadline, "leader-elect-renew-deadline", leader.RenewDeadline, "how long the leader keeps trying to renew its Lease before it gives up leading (the operator then exits)")
	fs.DurationVar(&leader.RetryPeriod, "leader-elect-retry-period", leader.RetryPeriod, "how often the leader renews its Lease and a standby tries to take it: one API write each time")
	watchNamespaces := fs.String("watch-namespaces", "", "comma-separated namespaces to watch; empty watches all")
	workerImage := fs.String("worker-image", os.Getenv("CONVEYOR_IMAGE"), "image for worker pods of clusters that name none (default: $CONVEYOR_IMAGE, the operator's own image)")
	connectorResync := fs.Duration("connector-resync", kafkaconnector.DefaultResync, "how often a connector's runtime status (state, tasks, limits, lag) is read again from the workers when nothing changed in the API server")
	connectorResyncMax := fs.Duration("connector-resync-max", 0, "how far apart a cluster's runtime status is read while its workers keep answering the same: the interval doubles from --connector-resync up to this after each unchanged read, and falls back at the first change or action (0: 4 x --connector-resync, 2m; at most --connector-resync turns this off)")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := leader.Validate(); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	cacheOpts := controllers.CacheOptions(splitList(*watchNamespaces))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading Kubernetes client configuration: %w", err)
	}
	mgrOpts := ctrl.Options{
		Scheme: newScheme(),
		Cache:  cacheOpts,
		// Secret values are never cached: a typed Secret read goes to the API server, one
		// GET at a time, so the operator needs no list or watch on every Secret.
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics:                controllers.MetricsOptions(*metricsAddr, *metricsSecure),
		HealthProbeBindAddress: *probeAddr,
	}
	controllers.LeaderElection(&mgrOpts, *leaderElect, os.Getenv("POD_NAMESPACE"), leader)
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := controllers.Setup(mgr, controllers.Options{
		WorkerImage:        *workerImage,
		OperatorNamespace:  os.Getenv("POD_NAMESPACE"),
		ConnectorResync:    *connectorResync,
		ConnectorResyncMax: *connectorResyncMax,
	}); err != nil {
		return fmt.Errorf("setting up reconcilers: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	ctrl.Log.WithName("setup").Info("starting the operator", "watchNamespaces", *watchNamespaces, "leaderElection", *leaderElect)
	return mgr.Start(ctrl.SetupSignalHandler())
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
