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
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/conveyor-dev/conveyor/test/testkit/certs"
)

// SecureKafkaOptions ask for a second Kafka broker that, like a production cluster, speaks
// only TLS with client certificates (mutual TLS) and accepts only one SASL/SCRAM-SHA-512
// user. It is a kfake process of its own, with its own data and cluster id ("kfake-secure"):
// kfake applies TLS and SASL to every listener of a broker, and the cluster's plain Kafka
// stays as the other tests expect it.
type SecureKafkaOptions struct {
	// User and Password are the one SASL/SCRAM-SHA-512 user the broker accepts. Empty:
	// "conveyor" and a random password.
	User, Password string
}

// SecureKafka is the running TLS and SASL broker and the credentials a client needs:
// the CA that signed the broker's certificate, a client certificate and key that CA signed
// (PEM), and the SASL user.
type SecureKafka struct {
	Addr                               string
	CAPEM, ClientCertPEM, ClientKeyPEM []byte
	User, Password                     string
}

// startSecureKafka writes the broker's certificate, key, client CA and password into
// Dir/kafka-secure-auth (mode 0600, for the broker process only) and starts the broker.
func (c *Cluster) startSecureKafka(ctx context.Context, bin string) error {
	o := *c.opts.SecureKafka
	if o.User == "" {
		o.User = "conveyor"
	}
	if o.Password == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		o.Password = "kfake-" + hex.EncodeToString(b)
	}
	ca, err := certs.NewCA("localcluster-kafka-ca")
	if err != nil {
		return err
	}
	serverCert, serverKey, err := ca.Issue("kafka-secure", "127.0.0.1", "localhost", netnsHostIP)
	if err != nil {
		return err
	}
	clientCert, clientKey, err := ca.Issue("conveyor-worker")
	if err != nil {
		return err
	}
	auth := filepath.Join(c.Dir, "kafka-secure-auth")
	if err := os.MkdirAll(auth, 0o700); err != nil {
		return err
	}
	files := map[string][]byte{"server.crt": serverCert, "server.key": serverKey, "ca.crt": ca.PEM, "password": []byte(o.Password)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(auth, name), b, 0o600); err != nil {
			return fmt.Errorf("writing the secure Kafka's %s: %w", name, err)
		}
	}
	args := []string{"--cluster-id", "kfake-secure",
		"--tls-cert", filepath.Join(auth, "server.crt"), "--tls-key", filepath.Join(auth, "server.key"), "--tls-client-ca", filepath.Join(auth, "ca.crt"),
		"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", o.User, "--sasl-password-file", filepath.Join(auth, "password")}
	k, err := startKafka(ctx, c.Dir, "kafka-secure", bin, 0, args, c.netns, c.logf)
	if err != nil {
		return err
	}
	c.secureKafka = k
	c.SecureKafka = &SecureKafka{Addr: k.addr, CAPEM: ca.PEM, ClientCertPEM: clientCert, ClientKeyPEM: clientKey, User: o.User, Password: o.Password}
	return nil
}

// ClientOpts are the franz-go options that reach the secure broker: its address, TLS with
// the client certificate, and SASL/SCRAM-SHA-512.
func (s *SecureKafka) ClientOpts() ([]kgo.Opt, error) {
	pair, err := tls.X509KeyPair(s.ClientCertPEM, s.ClientKeyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CAPEM) {
		return nil, errors.New("the secure Kafka's CA holds no certificate")
	}
	return []kgo.Opt{
		kgo.SeedBrokers(s.Addr),
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()),
	}, nil
}
