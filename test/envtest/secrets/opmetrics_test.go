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

package secrets

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/conveyor-dev/conveyor/controllers"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

// clusterRolesIn reads the ClusterRoles of a config/rbac file.
func clusterRolesIn(t *testing.T, file string) []*rbacv1.ClusterRole {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(envkit.RepoRoot(), "config", "rbac", file))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*rbacv1.ClusterRole
	for {
		var r rbacv1.ClusterRole
		if err := dec.Decode(&r); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if r.Kind == "ClusterRole" {
			out = append(out, &r)
		}
	}
}

// bindClusterRole creates role and binds it to subject.
func bindClusterRole(t *testing.T, role *rbacv1.ClusterRole, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	role = role.DeepCopy()
	role.ResourceVersion = ""
	if err := k8s.Create(ctx, role); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("creating ClusterRole %s: %v", role.Name, err)
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: role.Name + "-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatalf("binding ClusterRole %s: %v", role.Name, err)
	}
}

// saToken creates a ServiceAccount in ns and returns a token of it.
func saToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := k8s.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](3600)}}
	if err := k8s.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TestOperatorMetricsNeedAuthorizedToken: the operator's metrics endpoint
// (controllers.MetricsOptions, what `conveyor operator` serves by default)
// is HTTPS behind controller-runtime's authentication and authorization
// filter. The manager runs as a user holding only config/rbac's
// metrics-auth ClusterRole; a scraper bound to the metrics-reader
// ClusterRole gets the metrics, any other token 403, no token 401.
func TestOperatorMetricsNeedAuthorizedToken(t *testing.T) {
	const opUser = "conveyor-metrics-operator"
	const ns = "metrics-auth"
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	auth := clusterRolesIn(t, "metrics_auth_role.yaml")
	reader := clusterRolesIn(t, "metrics_reader_role.yaml")
	if len(auth) != 1 || len(reader) != 1 {
		t.Fatalf("config/rbac: %d metrics-auth and %d metrics-reader ClusterRoles, want one each", len(auth), len(reader))
	}
	bindClusterRole(t, auth[0], rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: opUser})
	scraper := saToken(t, ns, "prometheus")
	bindClusterRole(t, reader[0], rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns})
	other := saToken(t, ns, "someone")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := rest.CopyConfig(apiConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: opUser}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: k8s.Scheme(), Metrics: controllers.MetricsOptions(addr, true), HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed serving certificate
	get := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testkit.Eventually(t, 30*time.Second, "the metrics server answers the scraper", func() (bool, string) {
		code, body := get(scraper)
		return code == http.StatusOK && strings.Contains(body, "# TYPE"), fmt.Sprintf("%d %.200s", code, body)
	})
	if code, body := get(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d %.200s, want 401", code, body)
	}
	if code, body := get(other); code != http.StatusForbidden {
		t.Errorf("a token without the metrics-reader role: %d %.200s, want 403", code, body)
	}
	// A token the API server cannot parse makes the TokenReview fail, and
	// controller-runtime's filter answers that with 500 "Authentication
	// failed" (filters.go), not 401: refused either way.
	if code, body := get("not-a-token"); code != http.StatusUnauthorized && code != http.StatusInternalServerError {
		t.Errorf("a bogus token: %d %.300s, want it refused", code, body)
	}
}
