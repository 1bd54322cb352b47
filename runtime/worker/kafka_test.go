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

package worker

import (
	"context"
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
	"github.com/conveyor-dev/conveyor/test/testkit/certs"
)

// newTestCA returns a certificate authority that signs broker certificates.
func newTestCA(t *testing.T) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// serverCert returns a certificate of ca for dnsName only (no IP address).
func serverCert(t *testing.T, ca *certs.CA, dnsName string) tls.Certificate {
	t.Helper()
	cert, err := ca.TLS(dnsName, dnsName)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestKafkaOptsTLSChecks connects to a TLS broker reached by an address
// its certificate does not list (127.0.0.1; the certificate names
// broker.example): the host name check refuses it, ssl.endpoint.
// identification.algorithm=none accepts it while still checking the chain,
// and enable.ssl.certificate.verification=false accepts anything.
func TestKafkaOptsTLSChecks(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert(t, ca, "broker.example")}}))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	dir := t.TempDir()
	caFile, otherFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherFile, other.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		settings map[string]string
		wantErr  string // "" = connects
	}{
		{"host name checked", map[string]string{workerconfig.KeySSLCALocation: caFile}, "cannot validate certificate for 127.0.0.1"},
		{"host name not checked", map[string]string{workerconfig.KeySSLCALocation: caFile, workerconfig.KeySSLEndpointIdentification: "none"}, ""},
		{"kafka's empty algorithm", map[string]string{workerconfig.KeySSLCALocation: caFile, workerconfig.KeySSLEndpointIdentification: ""}, ""},
		{"chain still checked", map[string]string{workerconfig.KeySSLCALocation: otherFile, workerconfig.KeySSLEndpointIdentification: "none"}, "verifying the certificate of broker"},
		{"no verification", map[string]string{workerconfig.KeySSLCertificateVerification: "false"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]string{
				workerconfig.KeyBootstrapServers: broker.ListenAddrs()[0], workerconfig.KeyGroupID: "g",
				workerconfig.KeySecurityProtocol: workerconfig.ProtocolSSL,
			}
			for k, v := range tc.settings {
				m[k] = v
			}
			cfg, err := workerconfig.Parse(m)
			if err == nil {
				err = cfg.Validate()
			}
			if err != nil {
				t.Fatal(err)
			}
			opts, err := KafkaOpts(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = cl.Ping(ctx)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ping: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ping: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestKafkaOptsClientRack(t *testing.T) {
	for _, rack := range []string{"", "zone-a"} {
		cfg := workerconfig.Default()
		cfg.BootstrapServers, cfg.GroupID, cfg.ClientRack = []string{"127.0.0.1:1"}, "g", rack
		opts, err := KafkaOpts(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		got := cl.OptValue(kgo.Rack)
		cl.Close()
		if got != rack {
			t.Fatalf("client.rack=%q: kgo.Rack is %v", rack, got)
		}
	}
}
