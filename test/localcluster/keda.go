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
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/conveyor-dev/conveyor/test/testkit/certs"
)

// KEDAImage is the image name the KEDA pods use; it maps to the folder of the binaries that
// hack/build-keda.sh builds (keda-operator, keda-adapter).
const KEDAImage = "localcluster.test/keda"

// KEDAVersion is the KEDA release the local cluster runs.
const KEDAVersion = "2.21.0"

// BuildKEDA runs hack/build-keda.sh (it builds KEDA's operator and metrics API server once
// into ~/.cache/conveyor; its progress goes to progress) and returns the folder holding
// keda-operator, keda-adapter and crd/.
func BuildKEDA(ctx context.Context, progress io.Writer) (string, error) {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return "", fmt.Errorf("building KEDA: run inside the module: %w", err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-keda.sh"))
	cmd.Env = append(os.Environ(), "KEDA_VERSION="+KEDAVersion)
	cmd.Stderr = progress
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/build-keda.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// installKEDA runs KEDA in the cluster as KEDA's own manifests do: its CRDs, the operator
// and the metrics API server as pods of namespace keda, their Services (with selectors:
// pods have routable addresses here, so the endpointslice controller fills them), and the
// APIService v1beta1.external.metrics.k8s.io. It returns when that APIService is Available.
//
// Differences from KEDA's manifests, for a cluster without DNS, kube-proxy or a container
// per pod network: the certificates (Secret kedaorg-certs) come from the local cluster, not
// from KEDA's cert rotation, and the APIService carries their CA; the pods share one network
// namespace, so every listener binds the pod's IP, and the metrics server reaches the
// operator's gRPC service on 127.0.0.1:9666 with the TLS name of its Service; the
// ServiceAccount is bound to cluster-admin.
func (c *Cluster) installKEDA(ctx context.Context, kedaDir string) error {
	start := time.Now()
	ca, err := certs.NewCA("localcluster-keda-ca")
	if err != nil {
		return err
	}
	var names []string
	for _, svc := range []string{"keda-operator", "keda-metrics-apiserver"} {
		names = append(names, svc, svc+".keda", svc+".keda.svc", svc+".keda.svc.cluster.local")
	}
	crt, key, err := ca.Issue("keda-operator", append(names, "127.0.0.1", "localhost")...)
	if err != nil {
		return err
	}
	b64 := base64.StdEncoding.EncodeToString
	var manifest bytes.Buffer
	if err := kedaManifest.Execute(&manifest, map[string]string{
		"Image": KEDAImage + ":" + KEDAVersion, "CA": b64(ca.PEM), "Cert": b64(crt), "Key": b64(key),
	}); err != nil {
		return fmt.Errorf("rendering KEDA's manifest: %w", err)
	}
	if out, err := c.RunKubectl(ctx, "", "apply", "--server-side", "-f", filepath.Join(kedaDir, "crd")); err != nil {
		return fmt.Errorf("installing KEDA's CRDs: %w\n%s", err, out)
	}
	if out, err := c.RunKubectl(ctx, "", "wait", "--for=condition=Established", "--timeout=60s", "-f", filepath.Join(kedaDir, "crd")); err != nil {
		return fmt.Errorf("waiting for KEDA's CRDs: %w\n%s", err, out)
	}
	if out, err := c.RunKubectl(ctx, manifest.String(), "apply", "-f", "-"); err != nil {
		return fmt.Errorf("installing KEDA: %w\n%s", err, out)
	}
	if out, err := c.RunKubectl(ctx, "", "wait", "--for=condition=Available", "--timeout=150s", "apiservice/v1beta1.external.metrics.k8s.io"); err != nil {
		state, _ := c.RunKubectl(ctx, "", "get", "deployments,replicasets,pods,endpointslices,events", "-n", "keda")
		return fmt.Errorf("waiting for KEDA's metrics API (APIService v1beta1.external.metrics.k8s.io; logs in %s/logs/keda_*): %w\n%s\n%s", c.Dir, err, out, state)
	}
	if out, err := c.RunKubectl(ctx, "", "-n", "keda", "wait", "--for=condition=Available", "--timeout=120s", "deployment/keda-operator"); err != nil {
		return fmt.Errorf("waiting for the KEDA operator: %w\n%s", err, out)
	}
	c.logf("KEDA %s running, APIService v1beta1.external.metrics.k8s.io Available (%.1fs)", KEDAVersion, time.Since(start).Seconds())
	return nil
}

var kedaManifest = template.Must(template.New("keda").Parse(`apiVersion: v1
kind: Namespace
metadata:
  name: keda
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: keda-operator
  namespace: keda
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: keda-operator-localcluster
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: keda-operator
  namespace: keda
---
apiVersion: v1
kind: Secret
metadata:
  name: kedaorg-certs
  namespace: keda
type: kubernetes.io/tls
data:
  ca.crt: {{.CA}}
  tls.crt: {{.Cert}}
  tls.key: {{.Key}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: keda-operator
  namespace: keda
  labels: {app: keda-operator}
spec:
  replicas: 1
  selector:
    matchLabels: {app: keda-operator}
  template:
    metadata:
      labels: {app: keda-operator}
    spec:
      serviceAccountName: keda-operator
      securityContext: {runAsNonRoot: true}
      terminationGracePeriodSeconds: 10
      containers:
      - name: keda-operator
        image: {{.Image}}
        command: [/usr/local/bin/keda-operator]
        args:
        - --leader-elect=false
        - --zap-log-level=info
        - --zap-encoder=console
        - --enable-cert-rotation=false
        - --metrics-bind-address=$(POD_IP):8080
        - --health-probe-bind-address=$(POD_IP):8081
        - --metrics-service-bind-address=:9666
        env:
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: WATCH_NAMESPACE, value: ""}
        - {name: KEDA_HTTP_DEFAULT_TIMEOUT, value: "3000"}
        ports:
        - {name: grpc, containerPort: 9666}
        - {name: probes, containerPort: 8081}
        readinessProbe:
          httpGet: {path: /readyz, port: 8081}
          periodSeconds: 2
        volumeMounts:
        - {name: certificates, mountPath: /certs, readOnly: true}
      volumes:
      - name: certificates
        secret: {secretName: kedaorg-certs}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: keda-metrics-apiserver
  namespace: keda
  labels: {app: keda-metrics-apiserver}
spec:
  replicas: 1
  selector:
    matchLabels: {app: keda-metrics-apiserver}
  template:
    metadata:
      labels: {app: keda-metrics-apiserver}
    spec:
      serviceAccountName: keda-operator
      securityContext: {runAsNonRoot: true}
      containers:
      - name: keda-metrics-apiserver
        image: {{.Image}}
        command: [/usr/local/bin/keda-adapter]
        args:
        - --secure-port=6443
        - --bind-address=$(POD_IP)
        - --port=8082
        - --zap-log-level=info
        - --client-ca-file=/certs/ca.crt
        - --tls-cert-file=/certs/tls.crt
        - --tls-private-key-file=/certs/tls.key
        - --cert-dir=/certs
        - --metrics-service-address=127.0.0.1:9666
        - --metrics-service-grpc-authority=keda-operator.keda.svc.cluster.local
        env:
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: WATCH_NAMESPACE, value: ""}
        ports:
        - {name: https, containerPort: 6443}
        readinessProbe:
          httpGet: {scheme: HTTPS, path: /readyz, port: 6443}
          periodSeconds: 2
        volumeMounts:
        - {name: temp-vol, mountPath: /tmp}
        - {name: certificates, mountPath: /certs, readOnly: true}
      volumes:
      - name: temp-vol
        emptyDir: {}
      - name: certificates
        secret: {secretName: kedaorg-certs}
---
apiVersion: v1
kind: Service
metadata:
  name: keda-operator
  namespace: keda
spec:
  selector: {app: keda-operator}
  ports:
  - {name: grpc, port: 9666, targetPort: 9666}
---
apiVersion: v1
kind: Service
metadata:
  name: keda-metrics-apiserver
  namespace: keda
spec:
  selector: {app: keda-metrics-apiserver}
  ports:
  - {name: https, port: 443, targetPort: 6443}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.external.metrics.k8s.io
spec:
  service: {name: keda-metrics-apiserver, namespace: keda, port: 443}
  group: external.metrics.k8s.io
  version: v1beta1
  caBundle: {{.CA}}
  groupPriorityMinimum: 100
  versionPriority: 100
`))
