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
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/properties"
)

// EnvProvider resolves ${env:VAR}.
type EnvProvider struct {
	// LookupEnv is os.LookupEnv when nil.
	LookupEnv func(string) (string, bool)
	// Allowed, when not nil, lists the only variables it may read.
	Allowed []string
}

// Get returns the environment variables named by keys.
func (p EnvProvider) Get(_ context.Context, path string, keys []string) (map[string]string, error) {
	if path != "" {
		return nil, fmt.Errorf("env placeholders take one part, ${env:VAR}; got a path %q", path)
	}
	lookup := p.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		if p.Allowed != nil && !slices.Contains(p.Allowed, k) {
			return nil, fmt.Errorf("environment variable %q is not in the allowed list", k)
		}
		v, ok := lookup(k)
		if !ok {
			return nil, fmt.Errorf("environment variable %q is not set", k)
		}
		out[k] = v
	}
	return out, nil
}

// FileProvider resolves ${file:<path>:<key>} from a properties file and
// ${file:<path>} to a whole file's content.
type FileProvider struct {
	// AllowedPaths, when not empty, restricts reads to files under these
	// directories.
	AllowedPaths []string
	// strict (distributed mode) refuses every path when AllowedPaths is
	// empty, relative paths, and links that lead outside AllowedPaths.
	strict bool
}

// Get reads the file at path (or, with an empty path, each key as a file).
func (p FileProvider) Get(_ context.Context, path string, keys []string) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	if path == "" {
		for _, k := range keys {
			if err := p.allowed(k); err != nil {
				return nil, err
			}
			b, err := os.ReadFile(k)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", k, err)
			}
			out[k] = strings.TrimRight(string(b), "\r\n")
		}
		return out, nil
	}
	if err := p.allowed(path); err != nil {
		return nil, err
	}
	m, err := properties.Load(path)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			return nil, fmt.Errorf("file %s has no key %q", path, k)
		}
		out[k] = v
	}
	return out, nil
}

func (p FileProvider) allowed(path string) error {
	if p.strict {
		return realAllowed(path, p.AllowedPaths)
	}
	if len(p.AllowedPaths) == 0 {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	for _, dir := range p.AllowedPaths {
		d, err := filepath.Abs(dir)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(d, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("file %s is outside the allowed paths %v", path, p.AllowedPaths)
}

// ServiceAccountDir is where Kubernetes mounts a pod's ServiceAccount
// token, CA bundle and namespace.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// SecretProvider resolves ${secret:<name>:<key>} by reading the Secret
// <name> in Namespace from the Kubernetes API server: one authenticated
// HTTPS GET per Secret, with plain net/http (the worker links no
// Kubernetes client library).
type SecretProvider struct {
	// BaseURL is the API server, for example https://10.96.0.1:443.
	BaseURL string
	// Namespace is the namespace to read Secrets from.
	Namespace string
	// TokenFile holds the bearer token; it is re-read on every request
	// because Kubernetes rotates projected tokens.
	TokenFile string
	// Client is the HTTP client (with the cluster CA).
	Client *http.Client
}

// NewInClusterSecretProvider builds a SecretProvider from the pod
// environment: KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount files.
func NewInClusterSecretProvider() (*SecretProvider, error) {
	return InClusterSecretProvider(os.Getenv, ServiceAccountDir)
}

// InClusterSecretProvider is NewInClusterSecretProvider with the
// environment and the ServiceAccount directory given (for tests).
func InClusterSecretProvider(getenv func(string) string, saDir string) (*SecretProvider, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; ${secret:...} placeholders need the API server")
	}
	ns, err := os.ReadFile(filepath.Join(saDir, "namespace"))
	if err != nil {
		return nil, fmt.Errorf("reading the pod namespace: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate found in %s", filepath.Join(saDir, "ca.crt"))
	}
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        2,
		IdleConnTimeout:     30 * time.Second,
	}
	return &SecretProvider{
		BaseURL:   "https://" + net.JoinHostPort(host, port),
		Namespace: strings.TrimSpace(string(ns)),
		TokenFile: filepath.Join(saDir, "token"),
		Client:    &http.Client{Transport: transport, Timeout: 15 * time.Second},
	}, nil
}

// secretNameRE is a DNS subdomain (RFC 1123), the form of Secret names.
var secretNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Get reads the Secret named path and returns the requested keys.
func (p *SecretProvider) Get(ctx context.Context, name string, keys []string) (map[string]string, error) {
	if name == "" {
		return nil, errors.New("secret placeholders need a Secret name and a key: ${secret:<name>:<key>}")
	}
	if len(name) > 253 || !secretNameRE.MatchString(name) {
		return nil, fmt.Errorf("%q is not a valid Secret name", name)
	}
	token, err := os.ReadFile(p.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("reading the ServiceAccount token: %w", err)
	}
	u := fmt.Sprintf("%s/api/v1/namespaces/%s/secrets/%s", strings.TrimRight(p.BaseURL, "/"), url.PathEscape(p.Namespace), url.PathEscape(name))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("building request for Secret %s/%s: %w", p.Namespace, name, err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Accept", "application/json")
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", p.Namespace, name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", p.Namespace, name, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("Secret %s/%s not found", p.Namespace, name)
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("reading Secret %s/%s: the API server rejected the ServiceAccount token (401)", p.Namespace, name)
	case http.StatusForbidden:
		return nil, fmt.Errorf("reading Secret %s/%s: forbidden (403): the worker's ServiceAccount may only read Secrets its Role lists; reference the Secret from the connector so the operator grants it", p.Namespace, name)
	default:
		return nil, fmt.Errorf("reading Secret %s/%s: API server answered %s", p.Namespace, name, resp.Status)
	}
	var secret struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(body, &secret); err != nil {
		return nil, fmt.Errorf("decoding Secret %s/%s: %w", p.Namespace, name, err)
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		enc, ok := secret.Data[k]
		if !ok {
			return nil, fmt.Errorf("Secret %s/%s has no key %q", p.Namespace, name, k)
		}
		dec, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, fmt.Errorf("Secret %s/%s key %q: invalid base64", p.Namespace, name, k)
		}
		out[k] = string(dec)
	}
	return out, nil
}

// Standard returns a resolver with the env and file providers, plus the
// secret provider when secrets is not nil.
func Standard(secrets Provider) *Resolver {
	r := NewResolver(map[string]Provider{"env": EnvProvider{}, "file": FileProvider{}})
	if secrets != nil {
		r.Register("secret", secrets)
	}
	return r
}
