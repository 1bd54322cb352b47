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

package certs

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
)

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIssuedCertificatesVerify: a certificate the CA issued verifies against the
// CA for its names and both uses, and not against another CA.
func TestIssuedCertificatesVerify(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.Issue("server", "127.0.0.1", "broker.example")
	if err != nil {
		t.Fatal(err)
	}
	cert := parse(t, certPEM)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, name := range []string{"127.0.0.1", "broker.example"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("verifying for %s: %v", name, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots}); err == nil {
		t.Error("verified for a name it does not hold")
	}
	others := x509.NewCertPool()
	others.AddCert(other.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: others}); err == nil {
		t.Error("verified against another CA")
	}
	if _, err := ca.TLS("client"); err != nil {
		t.Errorf("TLS: %v", err)
	}
}

// TestSelfSignedIsItsOwnCA: a client that trusts the certificate itself accepts it.
func TestSelfSignedIsItsOwnCA(t *testing.T) {
	certPEM, _, err := SelfSigned("server", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	cert := parse(t, certPEM)
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: roots}); err != nil {
		t.Fatal(err)
	}
}
