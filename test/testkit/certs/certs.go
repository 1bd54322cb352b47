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

// Package certs makes every certificate the tests and the local cluster
// need: a throw-away CA that issues certificates for servers and clients,
// and a self-signed server certificate that is its own CA. Keys are ECDSA
// P-256; certificates are valid from an hour ago for ten years. It links
// no Kubernetes package, so runtime tests may use it.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a throw-away certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is Cert in PEM: what a client or server that trusts the CA reads.
	PEM []byte
}

// NewCA makes a CA whose certificate names name.
func NewCA(name string) (*CA, error) {
	tmpl := template(name, nil)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, key, err := sign(tmpl, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("making the %s CA: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pemBlock("CERTIFICATE", der)}, nil
}

// Issue signs a certificate for cn, for both server and client use, valid
// for names (IP addresses or DNS names; none for a client). It returns the
// certificate and its key in PEM.
func (ca *CA) Issue(cn string, names ...string) (certPEM, keyPEM []byte, err error) {
	der, key, err := sign(template(cn, names), ca.Cert, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate of %s: %w", cn, err)
	}
	return encode(der, key)
}

// TLS is Issue as a certificate for a tls.Config.
func (ca *CA) TLS(cn string, names ...string) (tls.Certificate, error) {
	certPEM, keyPEM, err := ca.Issue(cn, names...)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// SelfSigned makes a certificate for names that is its own CA: a client
// trusts certPEM itself. It returns the certificate and its key in PEM.
func SelfSigned(cn string, names ...string) (certPEM, keyPEM []byte, err error) {
	tmpl := template(cn, names)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage |= x509.KeyUsageCertSign
	der, key, err := sign(tmpl, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("making the self-signed certificate of %s: %w", cn, err)
	}
	return encode(der, key)
}

// WriteSelfSigned writes a self-signed certificate for 127.0.0.1 and
// localhost and its key into dir as cert.pem and key.pem, and returns their
// paths.
func WriteSelfSigned(dir string) (certFile, keyFile string, err error) {
	certPEM, keyPEM, err := SelfSigned("conveyor test server", "127.0.0.1", "localhost")
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// template is a leaf certificate for cn and names, for servers and clients.
func template(cn string, names []string) *x509.Certificate {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	return tmpl
}

// sign makes a key and signs tmpl with parent's key (self-signed when
// parent is nil).
func sign(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key: %w", err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	return der, key, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", kder), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
