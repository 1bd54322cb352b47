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

package clientconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Keys of a client's identity (Kafka's names).
const (
	KeySecurityProtocol = "security.protocol"
	KeySASLMechanism    = "sasl.mechanism"
	KeySASLJAASConfig   = "sasl.jaas.config"
)

// Security protocols (security.protocol).
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// SASL mechanisms (sasl.mechanism).
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Login modules of sasl.jaas.config.
const (
	plainModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// UsesTLS reports whether a security protocol uses TLS.
func UsesTLS(protocol string) bool { return protocol == ProtocolSSL || protocol == ProtocolSASLSSL }

// UsesSASL reports whether a security protocol authenticates with SASL.
func UsesSASL(protocol string) bool {
	return protocol == ProtocolSASLPlaintext || protocol == ProtocolSASLSSL
}

// Security is how a client reaches Kafka: its protocol, TLS settings and
// SASL login.
type Security struct {
	// Protocol is one of the Protocol constants; "" is PLAINTEXT.
	Protocol string
	// TLS holds the TLS settings when Protocol uses TLS; nil means the
	// system's roots.
	TLS *tls.Config
	// Mechanism, User and Pass are the SASL login when Protocol uses SASL.
	Mechanism, User, Pass string
}

// Opts returns the franz-go options of s: kgo.DialTLSConfig and kgo.SASL.
func (s Security) Opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if UsesTLS(s.Protocol) {
		tc := s.TLS
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if UsesSASL(s.Protocol) {
		switch s.Mechanism {
		case MechanismPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: s.User, Pass: s.Pass}.AsMechanism()))
		case MechanismScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Pass}.AsSha256Mechanism()))
		case MechanismScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("%s: %q is not supported: use %s, %s or %s", KeySASLMechanism, s.Mechanism, MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
		}
	}
	return opts, nil
}

// IsRefused reports whether err is the broker refusing a client's
// principal: an ACL that does not allow the request (topic, group, cluster,
// transactional id) or a failed login. Retrying does not change it, so a
// task fails with it and its status shows the broker's error; the fix is an
// ACL or the login (docs/connectors/client-overrides.md).
func IsRefused(err error) bool {
	for _, e := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// SecurityOverride is what a client's settings say of its identity; unset
// fields keep the worker's.
type SecurityOverride struct {
	Protocol, Mechanism string
	jaas                string
}

// jaasLogin is a parsed sasl.jaas.config.
type jaasLogin struct {
	module, user, pass string
}

// mechanismFits reports whether a SASL mechanism goes with the login module.
func (j jaasLogin) mechanismFits(m string) bool {
	if j.module == plainModule {
		return m == MechanismPlain
	}
	return m == MechanismScramSHA256 || m == MechanismScramSHA512
}

// parseJAAS reads one login module entry:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
//
// Messages name the module and option keys, never a value.
func parseJAAS(s string) (jaasLogin, error) {
	rest := strings.TrimSpace(s)
	next := func() string {
		rest = strings.TrimLeft(rest, " \t\r\n")
		i := strings.IndexAny(rest, " \t\r\n;=")
		if i < 0 {
			i = len(rest)
		}
		tok := rest[:i]
		rest = rest[i:]
		return tok
	}
	var j jaasLogin
	j.module = next()
	if j.module != plainModule && j.module != scramModule {
		return jaasLogin{}, fmt.Errorf("login module %q is not supported: use %s or %s", j.module, plainModule, scramModule)
	}
	switch flag := next(); flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return jaasLogin{}, fmt.Errorf("the login module must be followed by a control flag (required)")
	}
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if strings.HasPrefix(rest, ";") {
			if strings.TrimSpace(rest[1:]) != "" {
				return jaasLogin{}, fmt.Errorf("holds more than one login module entry; give one")
			}
			break
		}
		if rest == "" {
			return jaasLogin{}, fmt.Errorf("must end with ';'")
		}
		key := next()
		if key == "" || !strings.HasPrefix(rest, "=") {
			return jaasLogin{}, fmt.Errorf("options must be key=value pairs")
		}
		rest = rest[1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			if i >= len(rest) {
				return jaasLogin{}, fmt.Errorf("the value of option %q has no closing quote", key)
			}
			val, rest = b.String(), rest[i+1:]
		} else {
			val = next()
		}
		switch key {
		case "username":
			j.user = val
		case "password":
			j.pass = val
		}
	}
	if j.user == "" || j.pass == "" {
		return jaasLogin{}, fmt.Errorf("the login module needs the options username and password")
	}
	return j, nil
}

// check reports conflicts of the override with the worker's security
// (a SASL login on a protocol without SASL, a mechanism that does not fit
// the login module, a bad sasl.jaas.config). A nil worker is unknown: it
// is taken to have a SASL login that fits.
func (o *SecurityOverride) check(keyOf func(string) string, worker *Security) error {
	base := Security{Protocol: ProtocolSASLPlaintext, Mechanism: MechanismPlain, User: "-"}
	if worker != nil {
		base = *worker
	} else if o.jaas != "" && o.Mechanism == "" {
		j, err := parseJAAS(o.jaas)
		if err != nil {
			return &Error{Key: keyOf(KeySASLJAASConfig), Message: invalid(keyOf(KeySASLJAASConfig), err)}
		}
		if j.module == scramModule {
			base.Mechanism = MechanismScramSHA512 // the worker's, which must fit
		}
	}
	base.TLS = nil
	if base.User != "" {
		base.Pass = "-" // only whether the worker has a login matters
	}
	_, err := o.Resolve(base, keyOf)
	return err
}

// Resolve returns the security of a client: the worker's (base) with the
// override over it. TLS keeps the worker's settings when the worker uses
// TLS, else the system's roots. An error names the key to fix.
func (o *SecurityOverride) Resolve(base Security, keyOf func(string) string) (Security, error) {
	s := base
	if o.Protocol != "" {
		s.Protocol = o.Protocol
	}
	if s.Protocol == "" {
		s.Protocol = ProtocolPlaintext
	}
	if !UsesTLS(base.Protocol) {
		s.TLS = nil
	}
	if !UsesSASL(s.Protocol) {
		if o.jaas != "" || o.Mechanism != "" {
			key := KeySASLJAASConfig
			if o.jaas == "" {
				key = KeySASLMechanism
			}
			return Security{}, &Error{Key: keyOf(KeySecurityProtocol), Message: fmt.Sprintf("%s is set but security.protocol=%s does not use SASL; set %s to %s or %s",
				keyOf(key), s.Protocol, keyOf(KeySecurityProtocol), ProtocolSASLPlaintext, ProtocolSASLSSL)}
		}
		s.Mechanism, s.User, s.Pass = "", "", ""
		return s, nil
	}
	if o.Mechanism != "" {
		s.Mechanism = o.Mechanism
	}
	if o.jaas != "" {
		j, err := parseJAAS(o.jaas)
		if err != nil {
			return Security{}, &Error{Key: keyOf(KeySASLJAASConfig), Message: invalid(keyOf(KeySASLJAASConfig), err)}
		}
		s.User, s.Pass = j.user, j.pass
		if s.Mechanism == "" && j.module == plainModule {
			s.Mechanism = MechanismPlain
		}
		if !j.mechanismFits(s.Mechanism) {
			return Security{}, &Error{Key: keyOf(KeySASLMechanism), Message: fmt.Sprintf("%q does not fit the login module %s of %s; set %s to %s", s.Mechanism, j.module, keyOf(KeySASLJAASConfig), keyOf(KeySASLMechanism), fitting(j))}
		}
	}
	if s.User == "" || s.Mechanism == "" {
		return Security{}, &Error{Key: keyOf(KeySASLJAASConfig), Message: fmt.Sprintf("security.protocol=%s needs a SASL login and the worker has none: set %s and %s", s.Protocol, keyOf(KeySASLMechanism), keyOf(KeySASLJAASConfig))}
	}
	return s, nil
}

func fitting(j jaasLogin) string {
	if j.module == plainModule {
		return MechanismPlain
	}
	return MechanismScramSHA256 + " or " + MechanismScramSHA512
}

// Connection is how the worker reaches Kafka: the options every client
// shares (seed brokers, rack, logger, client id) and the worker's security.
// A client with its own identity gets Base with its own security.
type Connection struct {
	Base     []kgo.Opt
	Security Security
}

// For returns the connection options of a client with settings s: the
// worker's, or Base with s's own identity when s names one, and client
// metrics pushes (KIP-714) off unless s says enable.metrics.push=true.
// The client's other options (s.Opts) are not among them.
func (c Connection) For(s Settings) ([]kgo.Opt, error) {
	sec := c.Security
	if s.Security != nil {
		var err error
		if sec, err = s.Security.Resolve(c.Security, s.Key); err != nil {
			return nil, err
		}
	}
	so, err := sec.Opts()
	if err != nil {
		return nil, err
	}
	opts := append(append([]kgo.Opt(nil), c.Base...), so...)
	if !s.metricsPush {
		opts = append(opts, kgo.DisableClientMetrics())
	}
	return opts, nil
}

// Key names a property as the settings were given it (producer.override.acks),
// or by its bare name when they were not given it.
func (s Settings) Key(name string) string {
	if k, ok := s.keys[name]; ok {
		return k
	}
	return name
}
