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

package servers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// EnvVersityGW names the variable that points at a versitygw binary;
// without it the one hack/versitygw.sh builds into the cache is used.
const EnvVersityGW = "CONVEYOR_VERSITYGW"

// VersityGWVersion is the versitygw release hack/versitygw.sh builds.
const VersityGWVersion = "1.8.0"

// S3 is a running versitygw S3 server on a POSIX folder.
type S3 struct {
	process
	// Endpoint is host:port (plain HTTP).
	Endpoint string
	// Access and Secret are the root credentials.
	Access, Secret string
	// Data is the POSIX folder holding the buckets: bucket/key is a file.
	Data string
}

// StartS3 starts versitygw on a free loopback port with fresh root
// credentials, serving the folder dir/data, and waits for /health.
func StartS3(ctx context.Context, dir string) (*S3, error) {
	bin, err := findBinary(EnvVersityGW, "versitygw not found: run hack/versitygw.sh (make test does)",
		filepath.Join(cacheDir(), "versitygw-"+VersityGWVersion, "versitygw"))
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	s := &S3{Endpoint: fmt.Sprintf("127.0.0.1:%d", port), Access: "conveyor" + hex.EncodeToString(tok[:4]), Secret: hex.EncodeToString(tok[4:]), Data: data}
	// The global flags go before the backend.
	args := []string{"--port", s.Endpoint, "--access", s.Access, "--secret", s.Secret, "--health", "/health", "posix", data}
	s.process = process{name: "versitygw " + s.Endpoint, bin: bin, args: args, log: filepath.Join(dir, "versitygw.log")}
	s.ready = func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+s.Endpoint+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET /health: %s", resp.Status)
		}
		return nil
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Client returns a minio-go client of the server.
func (s *S3) Client() (*minio.Client, error) {
	return minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.Access, s.Secret, ""), Region: "us-east-1"})
}

// URL is the server's endpoint as an http:// URL.
func (s *S3) URL() string { return "http://" + s.Endpoint }
