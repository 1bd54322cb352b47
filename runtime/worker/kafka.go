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
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// KafkaOpts returns the franz-go options that reach the worker's Kafka
// cluster: seed brokers, TLS and SASL from the worker config.
func KafkaOpts(cfg *workerconfig.Config, log *slog.Logger) ([]kgo.Opt, error) {
	conn, err := KafkaConnection(cfg, log)
	if err != nil {
		return nil, err
	}
	opts, err := conn.For(clientconfig.Settings{})
	return append(opts, kgo.DisableClientMetrics()), err
}

// KafkaConnection is how the worker reaches its Kafka cluster, in parts:
// the options every client shares (seed brokers, client id, logger, rack)
// and the worker's security (TLS and SASL), which a connector's own
// identity replaces for its clients.
func KafkaConnection(cfg *workerconfig.Config, log *slog.Logger) (*clientconfig.Connection, error) {
	conn := &clientconfig.Connection{Base: []kgo.Opt{
		kgo.SeedBrokers(cfg.BootstrapServers...),
		kgo.ClientID("conveyor-worker"),
		kgo.WithLogger(kgoLogger{log}),
	}}
	if cfg.ClientRack != "" {
		conn.Base = append(conn.Base, kgo.Rack(cfg.ClientRack))
	}
	conn.Security.Protocol = cfg.SecurityProtocol
	if cfg.UsesTLS() {
		tc, err := TLSConfig(cfg)
		if err != nil {
			return nil, err
		}
		conn.Security.TLS = tc
	}
	if cfg.UsesSASL() {
		pass, err := cfg.SASLPassword()
		if err != nil {
			return nil, err
		}
		conn.Security.Mechanism, conn.Security.User, conn.Security.Pass = cfg.SASLMechanism, cfg.SASLUsername, pass
	}
	return conn, nil
}

// TLSConfig returns the TLS settings of the worker's Kafka connections:
// ssl.ca.location (else the system roots), the client certificate for
// mutual TLS, and the checks that ssl.endpoint.identification.algorithm and
// enable.ssl.certificate.verification ask for.
func TLSConfig(cfg *workerconfig.Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.SSLCALocation != "" {
		pem, err := os.ReadFile(cfg.SSLCALocation)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", workerconfig.KeySSLCALocation, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", workerconfig.KeySSLCALocation, cfg.SSLCALocation)
		}
		tc.RootCAs = pool
	}
	if cfg.SSLCertificateLocation != "" || cfg.SSLKeyLocation != "" {
		cert, err := tls.LoadX509KeyPair(cfg.SSLCertificateLocation, cfg.SSLKeyLocation)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", workerconfig.KeySSLCertificateLocation, workerconfig.KeySSLKeyLocation, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	switch {
	case !cfg.SSLCertificateVerification:
		tc.InsecureSkipVerify = true
	case !cfg.VerifiesBrokerHostName():
		// Go verifies the chain and the host name together; turn both off
		// and verify the chain alone.
		tc.InsecureSkipVerify = true
		roots := tc.RootCAs
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("broker %s sent no certificate", cs.ServerName)
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			if err != nil {
				return fmt.Errorf("verifying the certificate of broker %s (%s=none checks the chain, not the host name): %w",
					cs.ServerName, workerconfig.KeySSLEndpointIdentification, err)
			}
			return nil
		}
	}
	return tc, nil
}

// kgoLogger routes franz-go's warnings and errors to slog.
type kgoLogger struct{ log *slog.Logger }

func (l kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelWarn
	if level == kgo.LogLevelError {
		lv = slog.LevelError
	}
	l.log.Log(context.Background(), lv, "kafka client: "+msg, keyvals...)
}
