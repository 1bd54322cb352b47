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

package converter

import (
	"container/list"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// Keys of the schema registry converters (Avro, JSON Schema, Protobuf),
// named as Confluent's converters name them.
const (
	KeyRegistryURL        = "schema.registry.url"
	KeyAuthSource         = "basic.auth.credentials.source"
	KeyAuthUserInfo       = "basic.auth.user.info"
	KeyAutoRegister       = "auto.register.schemas"
	KeyUseLatestVersion   = "use.latest.version"
	KeyKeySubjectStrategy = "key.subject.name.strategy"
	KeyValSubjectStrategy = "value.subject.name.strategy"
	KeyMaxSchemas         = "max.schemas.per.subject"
	KeyTruststoreLocation = "schema.registry.ssl.truststore.location"
	KeyTruststoreType     = "schema.registry.ssl.truststore.type"
	KeyKeystoreLocation   = "schema.registry.ssl.keystore.location"
	KeyKeystoreType       = "schema.registry.ssl.keystore.type"
)

// Subject name strategies (Confluent's class names; the short names are
// accepted too).
const (
	TopicNameStrategy       = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	RecordNameStrategy      = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	TopicRecordNameStrategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
)

// DefaultMaxSchemas bounds each schema cache of a converter.
const DefaultMaxSchemas = 1000

var registryKeys = []ConfigKey{
	{KeyRegistryURL, "LIST", "", "Comma-separated URLs of the schema registry (required)."},
	{KeyAuthSource, "STRING", "URL", "Where basic auth credentials come from: URL (user:password@ in the URL), USER_INFO (" + KeyAuthUserInfo + ")."},
	{KeyAuthUserInfo, "PASSWORD", "", "user:password for basic auth with USER_INFO; use a ${secret:...} placeholder."},
	{KeyAutoRegister, "BOOLEAN", "true", "Whether the writer registers the record's schema under its subject."},
	{KeyUseLatestVersion, "BOOLEAN", "false", "Whether the writer writes with the subject's latest registered schema instead (needs " + KeyAutoRegister + "=false)."},
	{KeyKeySubjectStrategy, "STRING", "TopicNameStrategy", "Subject of key schemas: TopicNameStrategy (<topic>-key), RecordNameStrategy (<record name>), TopicRecordNameStrategy (<topic>-<record name>)."},
	{KeyValSubjectStrategy, "STRING", "TopicNameStrategy", "Subject of value schemas: TopicNameStrategy (<topic>-value), RecordNameStrategy, TopicRecordNameStrategy."},
	{KeyMaxSchemas, "INT", strconv.Itoa(DefaultMaxSchemas), "Bound of each schema cache (by id, by subject and schema); the least recently used entry goes first."},
	{KeyTruststoreLocation, "STRING", "", "PEM file of the CA certificates that sign the registry's certificate (https URLs); the system's CAs otherwise."},
	{KeyTruststoreType, "STRING", "PEM", "Only PEM is supported."},
	{KeyKeystoreLocation, "STRING", "", "PEM file holding a client certificate and its key, for registries that ask for one."},
	{KeyKeystoreType, "STRING", "PEM", "Only PEM is supported."},
}

// registry is the part the schema registry converters share: the client,
// the subject name strategy, the wire format and the bounded caches.
type registry struct {
	cl           *sr.Client
	isKey        bool
	autoRegister bool
	useLatest    bool
	strategy     string
	header       sr.ConfluentHeader

	byID     *lru[int, any]    // schema id -> the format's parsed schema
	idOf     *lru[string, int] // subject + "\x00" + schema text -> id
	latestOf *lru[string, sr.SubjectSchema]
}

func bad(key, format string, a ...any) error {
	return fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...))
}

// newRegistry reads the registry keys. Errors name the key and never
// hold a credential.
func newRegistry(config map[string]string, isKey bool) (*registry, error) {
	r := &registry{isKey: isKey}
	raw := strings.TrimSpace(config[KeyRegistryURL])
	if raw == "" {
		return nil, bad(KeyRegistryURL, "missing: set the schema registry's URL, e.g. http://schema-registry:8081")
	}
	var urls []string
	var urlUser *url.Userinfo
	for _, u := range strings.Split(raw, ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, bad(KeyRegistryURL, "%q is not an http:// or https:// URL", redactURL(u))
		}
		if pu.User != nil {
			urlUser = pu.User
			pu.User = nil
		}
		urls = append(urls, pu.String())
	}
	opts := []sr.ClientOpt{sr.URLs(urls...), sr.UserAgent("conveyor")}

	switch src := strings.ToUpper(strings.TrimSpace(config[KeyAuthSource])); src {
	case "", "URL":
		if urlUser != nil {
			pw, _ := urlUser.Password()
			opts = append(opts, sr.BasicAuth(urlUser.Username(), pw))
		}
	case "USER_INFO":
		user, pw, ok := strings.Cut(config[KeyAuthUserInfo], ":")
		if !ok || user == "" {
			return nil, bad(KeyAuthUserInfo, "must be user:password when %s=USER_INFO", KeyAuthSource)
		}
		opts = append(opts, sr.BasicAuth(user, pw))
	default:
		return nil, bad(KeyAuthSource, "%q is not supported: use URL or USER_INFO", src)
	}

	tc, err := registryTLS(config)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	opts = append(opts, sr.HTTPClient(&http.Client{Transport: tr, Timeout: 30 * time.Second}))
	if r.cl, err = sr.NewClient(opts...); err != nil {
		return nil, bad(KeyRegistryURL, "%v", err)
	}

	if r.autoRegister, err = boolKey(config, KeyAutoRegister, true); err != nil {
		return nil, err
	}
	if r.useLatest, err = boolKey(config, KeyUseLatestVersion, false); err != nil {
		return nil, err
	}
	if r.useLatest && r.autoRegister {
		return nil, bad(KeyUseLatestVersion, "true needs %s=false (Confluent's rule: a writer either registers its schema or uses the latest one)", KeyAutoRegister)
	}
	stratKey := KeyValSubjectStrategy
	if isKey {
		stratKey = KeyKeySubjectStrategy
	}
	if r.strategy, err = resolveStrategy(stratKey, config[stratKey]); err != nil {
		return nil, err
	}
	n := DefaultMaxSchemas
	if v := strings.TrimSpace(config[KeyMaxSchemas]); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			return nil, bad(KeyMaxSchemas, "%q is not a positive number", v)
		}
	}
	r.byID, r.idOf, r.latestOf = newLRU[int, any](n), newLRU[string, int](n), newLRU[string, sr.SubjectSchema](n)
	return r, nil
}

func redactURL(u string) string {
	pu, err := url.Parse(strings.TrimSpace(u))
	if err != nil || pu.User == nil {
		if i := strings.LastIndex(u, "@"); i >= 0 {
			return "xxxxx" + u[i:]
		}
		return u
	}
	return pu.Redacted()
}

func resolveStrategy(key, v string) (string, error) {
	switch strings.TrimSpace(v) {
	case "", "TopicNameStrategy", TopicNameStrategy:
		return TopicNameStrategy, nil
	case "RecordNameStrategy", RecordNameStrategy:
		return RecordNameStrategy, nil
	case "TopicRecordNameStrategy", TopicRecordNameStrategy:
		return TopicRecordNameStrategy, nil
	}
	return "", bad(key, "%q is not a subject name strategy: use TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy", v)
}

func registryTLS(config map[string]string) (*tls.Config, error) {
	for _, k := range []string{KeyTruststoreType, KeyKeystoreType} {
		if t := strings.TrimSpace(config[k]); t != "" && !strings.EqualFold(t, "PEM") {
			return nil, bad(k, "%q is not supported: convert the store to PEM", t)
		}
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f := strings.TrimSpace(config[KeyTruststoreLocation]); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, bad(KeyTruststoreLocation, "reading %s: %v", f, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, bad(KeyTruststoreLocation, "%s holds no PEM certificate", f)
		}
		tc.RootCAs = pool
	}
	if f := strings.TrimSpace(config[KeyKeystoreLocation]); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, bad(KeyKeystoreLocation, "reading %s: %v", f, err)
		}
		cert, err := tls.X509KeyPair(pem, pem)
		if err != nil {
			return nil, bad(KeyKeystoreLocation, "%s must hold a PEM certificate and its key: %v", f, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// subject names the subject of a schema whose record name is
// recordName (empty for a schema that is no record).
func (r *registry) subject(topic, recordName string) (string, error) {
	suffix := "-value"
	if r.isKey {
		suffix = "-key"
	}
	switch r.strategy {
	case RecordNameStrategy, TopicRecordNameStrategy:
		if recordName == "" {
			return "", fmt.Errorf("%s needs a named record schema (a struct with a name); this schema has none", r.strategy)
		}
		if r.strategy == RecordNameStrategy {
			return recordName, nil
		}
		return topic + "-" + recordName, nil
	}
	return topic + suffix, nil
}

func registryError(what string, err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return fmt.Errorf("%s: the schema registry answered %d: %s", what, re.ErrorCode, re.Message)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// idFor returns the id of schema under subject: registered when
// auto.register.schemas, else looked up.
func (r *registry) idFor(subject string, schema sr.Schema) (int, error) {
	key := subject + "\x00" + schema.Schema
	if id, ok := r.idOf.get(key); ok {
		return id, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ss sr.SubjectSchema
	var err error
	if r.autoRegister {
		ss, err = r.cl.CreateSchema(ctx, subject, schema)
		if err != nil {
			return 0, registryError(fmt.Sprintf("registering the schema under subject %q", subject), err)
		}
	} else {
		ss, err = r.cl.LookupSchema(ctx, subject, schema)
		if err != nil {
			return 0, registryError(fmt.Sprintf("looking up the schema under subject %q (%s=false: register it first)", subject, KeyAutoRegister), err)
		}
	}
	r.idOf.put(key, ss.ID)
	return ss.ID, nil
}

// latest returns the subject's latest schema (use.latest.version); it is
// cached, as Confluent's converter caches it.
func (r *registry) latest(subject string) (sr.SubjectSchema, error) {
	if ss, ok := r.latestOf.get(subject); ok {
		return ss, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := r.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		return sr.SubjectSchema{}, registryError(fmt.Sprintf("reading the latest schema of subject %q", subject), err)
	}
	r.latestOf.put(subject, ss)
	return ss, nil
}

// parsed returns the parsed schema of an id, parsing it with parse on a
// cache miss.
func (r *registry) parsed(id int, parse func(sr.Schema) (any, error)) (any, error) {
	if v, ok := r.byID.get(id); ok {
		return v, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := r.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, registryError(fmt.Sprintf("reading schema id %d", id), err)
	}
	v, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	r.byID.put(id, v)
	return v, nil
}

// decodeHeader reads the Confluent wire format's magic byte and schema id.
func (r *registry) decodeHeader(b []byte) (int, []byte, error) {
	id, rest, err := r.header.DecodeID(b)
	if err != nil {
		return 0, nil, fmt.Errorf("not the schema registry's wire format (magic byte 0 and a 4-byte schema id): %w", err)
	}
	return id, rest, nil
}

// lru is a cache bounded to n entries that drops the least recently used.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	n     int
	order *list.List
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](n int) *lru[K, V] {
	return &lru[K, V]{n: n, order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(lruEntry[K, V]).v, true
	}
	var zero V
	return zero, false
}

func (c *lru[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		e.Value = lruEntry[K, V]{k, v}
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(lruEntry[K, V]{k, v})
	for c.order.Len() > c.n {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(lruEntry[K, V]).k)
	}
}

func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
