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

// Command kafka runs the franz-go kfake broker as a standalone process, for the local
// cluster and for real clients such as kcat. It prints "KAFKA_ADDR=host:port" once it
// listens, keeps its log in --data-dir so it survives restarts, and stops on SIGINT/SIGTERM.
// With --faults-file it refuses the requests that file describes (kfake's faults), so a
// test can make the broker refuse one client's reads while it runs (test/localcluster/kafkafault).
//
// With --tls-cert and --tls-key the broker speaks TLS only (with --tls-client-ca it asks
// every client for a certificate signed by that CA), and with --sasl-user it accepts only
// clients that authenticate as that user (--sasl-mechanism, password read from
// --sasl-password-file): a Kafka as a production cluster runs it, for the tests that need
// the workers to hold a TLS key and a SASL password.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyor-dev/conveyor/test/localcluster/kafkafault"
)

func main() {
	host := flag.String("host", "127.0.0.1", "loopback address to listen on")
	port := flag.Int("port", 9092, "port to listen on (0: a free one)")
	dataDir := flag.String("data-dir", "", "folder that keeps topics and records across restarts (empty: memory only)")
	partitions := flag.Int("partitions", 1, "partitions of auto-created topics (Kafka's num.partitions)")
	autoCreate := flag.Bool("auto-create-topics", true, "create topics on first use (Kafka's auto.create.topics.enable)")
	faultsFile := flag.String("faults-file", "", "JSON file of requests to refuse, re-read while the broker runs (empty: none)")
	clusterID := flag.String("cluster-id", "kfake", "the cluster id Metadata answers (two brokers of different data need different ids)")
	tlsCert := flag.String("tls-cert", "", "PEM server certificate: listen with TLS only (with --tls-key)")
	tlsKey := flag.String("tls-key", "", "PEM private key of --tls-cert")
	clientCA := flag.String("tls-client-ca", "", "PEM CA: require a client certificate it signed (mutual TLS)")
	saslMechanism := flag.String("sasl-mechanism", "SCRAM-SHA-512", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (with --sasl-user)")
	saslUser := flag.String("sasl-user", "", "accept only clients authenticated as this user (empty: no SASL)")
	saslPasswordFile := flag.String("sasl-password-file", "", "file holding the password of --sasl-user")
	minSession := flag.Duration("group-min-session-timeout", 0, "shortest session timeout a group member may ask for (Kafka's group.min.session.timeout.ms; 0: kfake's default)")
	flag.Parse()

	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.DefaultNumPartitions(*partitions),
		kfake.ClusterID(*clusterID),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(*host, p))
		}),
	}
	if *minSession > 0 {
		opts = append(opts, kfake.GroupMinSessionTimeout(*minSession))
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	secure, err := secureOpts(*tlsCert, *tlsKey, *clientCA, *saslMechanism, *saslUser, *saslPasswordFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kafka: %v\n", err)
		os.Exit(2)
	}
	opts = append(opts, secure...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kafka: starting kfake on %s:%d: %v\n", *host, *port, err)
		os.Exit(1)
	}
	if *faultsFile != "" {
		go kafkafault.Watch(c, *faultsFile)
	}
	addrs := c.ListenAddrs()
	fmt.Printf("KAFKA_ADDR=%s\n", addrs[0])

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	fmt.Fprintf(os.Stderr, "kafka: %v, shutting down\n", s)
	c.Close()
}

// secureOpts are the kfake options of the TLS and SASL flags (none when they are empty).
func secureOpts(cert, key, clientCA, mechanism, user, passwordFile string) ([]kfake.Opt, error) {
	var opts []kfake.Opt
	if (cert == "") != (key == "") {
		return nil, errors.New("--tls-cert and --tls-key: set both or neither")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		if clientCA != "" {
			b, err := os.ReadFile(clientCA)
			if err != nil {
				return nil, fmt.Errorf("--tls-client-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("--tls-client-ca: %s holds no PEM certificate", clientCA)
			}
			cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
		opts = append(opts, kfake.TLS(cfg))
	} else if clientCA != "" {
		return nil, errors.New("--tls-client-ca needs --tls-cert and --tls-key")
	}
	if user != "" {
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			return nil, fmt.Errorf("--sasl-password-file (the password of --sasl-user): %w", err)
		}
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(mechanism, user, strings.TrimRight(string(b), "\r\n")))
	}
	return opts, nil
}
