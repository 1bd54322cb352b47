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

package clusterkit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/condition"
)

// KafkaConnection is how the operator reaches a cluster's Kafka.
type KafkaConnection struct {
	// BootstrapServers are host:port addresses.
	BootstrapServers []string
	// TLS is nil for plaintext.
	TLS *tls.Config
	// SASL is nil without authentication.
	SASL sasl.Mechanism
}

// KgoOptions are the franz-go options of every operator client of a
// cluster's Kafka: its brokers, TLS and SASL, the operator's client id.
func KgoOptions(conn KafkaConnection) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(conn.BootstrapServers...),
		kgo.ClientID("conveyor-operator"),
		kgo.DialTimeout(5 * time.Second),
	}
	if conn.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(conn.TLS))
	}
	if conn.SASL != nil {
		opts = append(opts, kgo.SASL(conn.SASL))
	}
	return opts
}

// SecretValue reads one key of a Secret (with an uncached reader: the
// operator does not watch Secrets).
func SecretValue(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.SecretKeyRef, field string) ([]byte, *condition.Problem) {
	var s corev1.Secret
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &condition.Problem{Reason: v1alpha1.ReasonSecretNotFound,
				Message: fmt.Sprintf("%s: Secret %q does not exist in namespace %q; create it or fix the reference", field, ref.Name, namespace)}
		}
		return nil, &condition.Problem{Reason: v1alpha1.ReasonReconcileFailed, Message: fmt.Sprintf("%s: reading Secret %q: %v", field, ref.Name, err)}
	}
	v, ok := s.Data[ref.Key]
	if !ok || len(v) == 0 {
		return nil, &condition.Problem{Reason: v1alpha1.ReasonSecretNotFound,
			Message: fmt.Sprintf("%s: Secret %q has no key %q (or it is empty)", field, ref.Name, ref.Key)}
	}
	return v, nil
}

// KafkaConnectionFor builds the operator's own connection to a cluster's
// Kafka from spec.kafka and the Secrets it references (read with reader,
// which should bypass the cache), and returns the SASL user name. The
// KafkaConnector reconciler uses it for its kadm reads of partition counts.
func KafkaConnectionFor(ctx context.Context, reader client.Reader, cc *v1alpha1.ConnectCluster) (KafkaConnection, string, *condition.Problem) {
	k := cc.Spec.Kafka
	conn := KafkaConnection{BootstrapServers: SplitServers(k.BootstrapServers)}
	if t := k.TLS; t != nil {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // the user's explicit, documented test-only choice
		if t.CA != nil {
			pem, prob := SecretValue(ctx, reader, cc.Namespace, *t.CA, "spec.kafka.tls.ca")
			if prob != nil {
				return conn, "", prob
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return conn, "", &condition.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: fmt.Sprintf("spec.kafka.tls.ca: Secret %q key %q holds no PEM certificate", t.CA.Name, t.CA.Key)}
			}
			cfg.RootCAs = pool
		}
		if t.Certificate != nil && t.Key != nil {
			certPEM, prob := SecretValue(ctx, reader, cc.Namespace, *t.Certificate, "spec.kafka.tls.certificate")
			if prob != nil {
				return conn, "", prob
			}
			keyPEM, prob := SecretValue(ctx, reader, cc.Namespace, *t.Key, "spec.kafka.tls.key")
			if prob != nil {
				return conn, "", prob
			}
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return conn, "", &condition.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: fmt.Sprintf("spec.kafka.tls.certificate/key: not a valid PEM key pair: %v", err)}
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		conn.TLS = cfg
	}
	user := ""
	if s := k.SASL; s != nil {
		u, prob := SecretValue(ctx, reader, cc.Namespace, s.Username, "spec.kafka.sasl.username")
		if prob != nil {
			return conn, "", prob
		}
		p, prob := SecretValue(ctx, reader, cc.Namespace, s.Password, "spec.kafka.sasl.password")
		if prob != nil {
			return conn, "", prob
		}
		user = strings.TrimRight(string(u), "\r\n")
		pass := strings.TrimRight(string(p), "\r\n")
		switch s.Mechanism {
		case v1alpha1.SASLMechanismPlain:
			conn.SASL = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case v1alpha1.SASLMechanismScramSHA256:
			conn.SASL = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		case v1alpha1.SASLMechanismScramSHA512:
			conn.SASL = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		default:
			return conn, "", &condition.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: fmt.Sprintf("spec.kafka.sasl.mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)}
		}
	}
	return conn, user, nil
}

func SplitServers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
