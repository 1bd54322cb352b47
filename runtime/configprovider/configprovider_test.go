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

package configprovider

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conveyor-dev/conveyor/test/testkit/certs"
)

func TestParse(t *testing.T) {
	got := Parse("jdbc:postgresql://${env:DB_HOST}:5432/x?password=${secret:db-creds:password}&f=${file:/etc/a:b:c}${unknown}")
	want := []Placeholder{
		{Raw: "${env:DB_HOST}", Provider: "env", Key: "DB_HOST"},
		{Raw: "${secret:db-creds:password}", Provider: "secret", Path: "db-creds", Key: "password"},
		{Raw: "${file:/etc/a:b:c}", Provider: "file", Path: "/etc/a:b", Key: "c"},
	}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v want %+v", i, got[i], want[i])
		}
	}
	if ContainsPlaceholder("plain $ {x} ${") || !ContainsPlaceholder("a${env:X}b") {
		t.Fatal("ContainsPlaceholder")
	}
}

func TestResolveEnvFileAndUnknown(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "db.properties")
	if err := os.WriteFile(props, []byte("user=admin\npassword = s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(dir, "token")
	if err := os.WriteFile(whole, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewResolver(map[string]Provider{
		"env":  EnvProvider{LookupEnv: func(k string) (string, bool) { v, ok := map[string]string{"HOST": "db.local"}[k]; return v, ok }},
		"file": FileProvider{AllowedPaths: []string{dir}},
	})
	orig := map[string]string{
		"url":      "postgres://${file:" + props + ":user}:${file:" + props + ":password}@${env:HOST}/x",
		"token":    "${file:" + whole + "}",
		"template": "${vault:foo:bar} stays",
		"plain":    "x",
	}
	snapshot := maps.Clone(orig)
	got, err := r.Resolve(context.Background(), orig)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(orig, snapshot) {
		t.Fatal("input mutated")
	}
	want := map[string]string{"url": "postgres://admin:s3cr3t@db.local/x", "token": "tok", "template": "${vault:foo:bar} stays", "plain": "x"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v", got)
	}
	red := Redact(orig, got, "plain")
	if red["url"] != orig["url"] || red["plain"] != Redacted || strings.Contains(strings.Join(slicesOf(red), " "), "s3cr3t") {
		t.Fatalf("redact: %v", red)
	}

	for cfg, msg := range map[string]string{
		"${env:MISSING}":              `environment variable "MISSING" is not set`,
		"${file:" + props + ":nokey}": `has no key "nokey"`,
		"${file:/etc/passwd:root}":    "outside the allowed paths",
		"${file:" + dir + "/none:k}":  "no such file",
		"${env:a:b}":                  "env placeholders take one part",
	} {
		_, err := r.Resolve(context.Background(), map[string]string{"k": cfg})
		if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "config keys k") {
			t.Errorf("%s: want %q, got %v", cfg, msg, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("secret leaked in %v", err)
		}
	}
}

func slicesOf(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// fakeAPIServer serves Secrets like the Kubernetes API server.
func fakeAPIServer(t *testing.T, token string, secrets map[string]map[string]string, gets *atomic.Int32) (*httptest.Server, string) {
	t.Helper()
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if r.Method != http.MethodGet {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
			return
		}
		const prefix = "/api/v1/namespaces/team-a/secrets/"
		if !strings.HasPrefix(r.URL.Path, prefix) {
			http.Error(w, `{"kind":"Status","code":403}`, http.StatusForbidden)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, prefix)
		data, ok := secrets[name]
		if !ok {
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
			return
		}
		enc := map[string]string{}
		for k, v := range data {
			enc[k] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = jsonEncode(w, map[string]any{"kind": "Secret", "apiVersion": "v1", "metadata": map[string]any{"name": name}, "type": "Opaque", "data": enc})
	}))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	for name, content := range map[string][]byte{"ca.crt": caPEM, "token": []byte(token + "\n"), "namespace": []byte("team-a")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ts, dir
}

func TestSecretProviderAgainstTLSServer(t *testing.T) {
	var gets atomic.Int32
	ts, dir := fakeAPIServer(t, "sa-token", map[string]map[string]string{
		"db-creds": {"username": "app", "password": "p@ss:word}"},
	}, &gets)
	u, _ := url.Parse(ts.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	env := map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
	sp, err := InClusterSecretProvider(func(k string) string { return env[k] }, dir)
	if err != nil {
		t.Fatal(err)
	}
	r := Standard(sp)
	cfg := map[string]string{
		"connection.user":     "${secret:db-creds:username}",
		"connection.password": "${secret:db-creds:password}",
		"dsn":                 "user=${secret:db-creds:username}",
	}
	got, err := r.Resolve(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got["connection.user"] != "app" || got["connection.password"] != "p@ss:word}" || got["dsn"] != "user=app" {
		t.Fatalf("%v", got)
	}
	if n := gets.Load(); n != 1 {
		t.Fatalf("%d GETs for one Secret, want 1", n)
	}

	for cfg, msg := range map[string]string{
		"${secret:missing:k}":      "Secret team-a/missing not found",
		"${secret:db-creds:nokey}": `Secret team-a/db-creds has no key "nokey"`,
		"${secret:../x:k}":         "not a valid Secret name",
		"${secret:k}":              "need a Secret name and a key",
	} {
		_, err := r.Resolve(context.Background(), map[string]string{"k": cfg})
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: want %q, got %v", cfg, msg, err)
		}
	}

	// A rotated token file is re-read; a wrong token yields a clear 401 error.
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = r.Resolve(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}

	// A provider whose CA bundle does not hold the server's CA fails the TLS handshake.
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("sa-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), otherCA(t), 0o600); err != nil {
		t.Fatal(err)
	}
	sp2, err := InClusterSecretProvider(func(k string) string { return env[k] }, dir)
	if err != nil {
		t.Fatal(err)
	}
	before := gets.Load()
	_, err = sp2.Get(context.Background(), "db-creds", []string{"username"})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted server: %v", err)
	}
	if gets.Load() != before {
		t.Fatal("request reached the handler over an untrusted connection")
	}
}

// otherCA returns a PEM self-signed CA certificate unrelated to httptest's.
func otherCA(t *testing.T) []byte {
	t.Helper()
	ca, err := certs.NewCA("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	return ca.PEM
}

func TestInClusterNeedsEnvironment(t *testing.T) {
	_, err := InClusterSecretProvider(func(string) string { return "" }, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "KUBERNETES_SERVICE_HOST") {
		t.Fatal(err)
	}
}
