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
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/conveyor-dev/conveyor/test/testkit/certs"
	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

// controlPlane is etcd + kube-apiserver (driven by envtest's ControlPlane, with the
// ServiceAccount admission plugin back on and RBAC + Node authorization) plus a
// kube-controller-manager process.
type controlPlane struct {
	cp          *envtest.ControlPlane
	kcm         *proc.Process
	adminConfig *rest.Config
	client      kubernetes.Interface
	kubeconfig  string
	caPEM       []byte
	host, port  string
	logs        []*os.File
}

func startControlPlane(ctx context.Context, dir, assets string, controllers []string, ns *netNS, logf func(string, ...any)) (_ *controlPlane, retErr error) {
	c := &controlPlane{}
	defer func() {
		if retErr != nil {
			_ = c.stop()
		}
	}()
	openLog := func(name string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(dir, "logs", name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", name, err)
		}
		c.logs = append(c.logs, f)
		return f, nil
	}
	etcdLog, err := openLog("etcd.log")
	if err != nil {
		return nil, err
	}
	apiLog, err := openLog("kube-apiserver.log")
	if err != nil {
		return nil, err
	}
	kcmLog, err := openLog("kube-controller-manager.log")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"etcd", "apiserver"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("creating %s folder: %w", d, err)
		}
	}
	etcdPath, apiPath := filepath.Join(assets, "etcd"), filepath.Join(assets, "kube-apiserver")
	var etcdURL *url.URL
	var apiPort string
	if ns != nil {
		// envtest starts these two and checks their health on 127.0.0.1 from this
		// process: wrappers start them inside the namespace, and forwarders make the
		// same ports answer here.
		if etcdPath, err = ns.wrapperScript(dir, etcdPath); err != nil {
			return nil, err
		}
		if apiPath, err = ns.wrapperScript(dir, apiPath); err != nil {
			return nil, err
		}
		p, err := ns.listen(0, "")
		if err != nil {
			return nil, err
		}
		etcdURL = &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))}
		if p, err = ns.listen(0, ""); err != nil {
			return nil, err
		}
		apiPort = strconv.Itoa(p)
	}
	api := &envtest.APIServer{
		Path:         apiPath,
		CertDir:      filepath.Join(dir, "apiserver"),
		Out:          apiLog,
		Err:          apiLog,
		StartTimeout: 60 * time.Second,
		// It drains its connections on SIGTERM, which takes longer while
		// clients watch (RestartAPIServer).
		StopTimeout: 90 * time.Second,
	}
	api.Configure().
		// envtest disables the ServiceAccount admission plugin because it runs no
		// serviceaccount controller; we run one, so pods get their token volume as usual.
		Disable("disable-admission-plugins").
		Set("enable-admission-plugins", "NodeRestriction").
		Set("authorization-mode", "Node,RBAC").
		Set("allow-privileged", "true")
	if ns != nil {
		api.SecureServing.Address, api.SecureServing.Port = "127.0.0.1", apiPort
		if err := configureAggregation(api, dir); err != nil {
			return nil, err
		}
	}
	c.cp = &envtest.ControlPlane{
		Etcd: &envtest.Etcd{
			URL:          etcdURL,
			Path:         etcdPath,
			DataDir:      filepath.Join(dir, "etcd"),
			Out:          etcdLog,
			Err:          etcdLog,
			StartTimeout: 60 * time.Second,
			StopTimeout:  20 * time.Second,
		},
		APIServer:   api,
		KubectlPath: filepath.Join(assets, "kubectl"),
	}
	if err := c.cp.Start(); err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver (logs in %s/logs): %w", dir, err)
	}
	c.caPEM = api.SecureServing.CA
	c.host, c.port = api.SecureServing.Address, api.SecureServing.Port
	logf("kube-apiserver on https://%s", net.JoinHostPort(c.host, c.port))

	admin, err := c.cp.AddUser(envtest.User{Name: "localcluster-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("provisioning the admin user: %w", err)
	}
	c.adminConfig = rest.CopyConfig(admin.Config())
	// The kubelet writes many pod statuses; client-go's default 5 QPS would throttle it.
	c.adminConfig.QPS, c.adminConfig.Burst = 100, 200
	kc, err := admin.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("rendering the admin kubeconfig: %w", err)
	}
	c.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.kubeconfig, kc, 0o600); err != nil {
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	c.client, err = kubernetes.NewForConfig(c.adminConfig)
	if err != nil {
		return nil, fmt.Errorf("building the admin client: %w", err)
	}

	// kube-controller-manager runs as a member of system:masters: with
	// --use-service-account-credentials=false all controllers share its identity.
	kcmUser, err := c.cp.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("provisioning the controller-manager user: %w", err)
	}
	kcmKC, err := kcmUser.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("rendering the controller-manager kubeconfig: %w", err)
	}
	kcmKubeconfig := filepath.Join(dir, "apiserver", "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kcmKubeconfig, kcmKC, 0o600); err != nil {
		return nil, fmt.Errorf("writing controller-manager kubeconfig: %w", err)
	}
	rootCA := filepath.Join(dir, "apiserver", "serving-ca.crt")
	if err := os.WriteFile(rootCA, c.caPEM, 0o644); err != nil {
		return nil, fmt.Errorf("writing root CA: %w", err)
	}
	kcm := ns.command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kcmKubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--root-ca-file="+rootCA,
		"--cluster-name=localcluster",
		// Short syncs so that a local cluster reacts quickly.
		"--concurrent-gc-syncs=5",
		// The HPA reacts within seconds and scales down after a short stabilization
		// window (Kubernetes' defaults: 15s and 5m), so that autoscaling can be
		// watched and tested.
		"--horizontal-pod-autoscaler-sync-period=2s",
		"--horizontal-pod-autoscaler-downscale-stabilization="+hpaDownscaleStabilization.String(),
		"--v=1",
	)
	kcm.Stdout, kcm.Stderr = kcmLog, kcmLog
	kcm.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c.kcm, err = proc.Start(kcm, nil); err != nil {
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	logf("kube-controller-manager started (pid %d), controllers %s", c.kcm.Pid(), strings.Join(controllers, ","))
	return c, nil
}

// waitDefaultServiceAccount waits until the serviceaccount controller created the
// namespace's default ServiceAccount (pods are refused without it) and the root CA
// ConfigMap exists.
func (c *controlPlane) waitDefaultServiceAccount(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.kcm.Done():
			return false, errors.New("kube-controller-manager exited (see logs/kube-controller-manager.log)")
		default:
		}
		if _, err := c.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, nil
		}
		if _, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for ServiceAccount %s/default and ConfigMap kube-root-ca.crt from kube-controller-manager: %w", ns, err)
	}
	return nil
}

func (c *controlPlane) stop() error {
	var errs []error
	if c.kcm != nil {
		_ = c.kcm.Stop(syscall.SIGTERM, 5*time.Second) // killed after 5s: nothing to report
	}
	if c.cp != nil {
		if err := c.cp.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
		}
	}
	for _, f := range c.logs {
		_ = f.Close()
	}
	return errors.Join(errs...)
}

// hpaDownscaleStabilization is kube-controller-manager's
// --horizontal-pod-autoscaler-downscale-stabilization in a local cluster.
const hpaDownscaleStabilization = 15 * time.Second

// configureAggregation sets the API server up to proxy aggregated APIs (KEDA's external
// metrics server) in the network namespace: it listens on every address of the namespace
// and advertises 10.200.0.1 (the kubernetes Service's endpoint may not be a loopback
// address), routes to a Service's endpoints rather than its ClusterIP (no kube-proxy), and
// authenticates to the aggregated servers with a front-proxy client certificate.
func configureAggregation(api *envtest.APIServer, dir string) error {
	ca, err := certs.NewCA("localcluster-front-proxy-ca")
	if err != nil {
		return err
	}
	crt, key, err := ca.Issue("front-proxy-client")
	if err != nil {
		return err
	}
	files := map[string][]byte{"front-proxy-ca.crt": ca.PEM, "front-proxy-client.crt": crt, "front-proxy-client.key": key}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, "apiserver", name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	api.Configure().
		Set("bind-address", "0.0.0.0").
		Set("advertise-address", netnsHostIP).
		Set("enable-aggregator-routing", "true").
		Set("requestheader-client-ca-file", filepath.Join(dir, "apiserver", "front-proxy-ca.crt")).
		Set("requestheader-allowed-names", "front-proxy-client").
		Set("requestheader-username-headers", "X-Remote-User").
		Set("requestheader-group-headers", "X-Remote-Group").
		Set("requestheader-extra-headers-prefix", "X-Remote-Extra-").
		Set("proxy-client-cert-file", filepath.Join(dir, "apiserver", "front-proxy-client.crt")).
		Set("proxy-client-key-file", filepath.Join(dir, "apiserver", "front-proxy-client.key"))
	return nil
}
