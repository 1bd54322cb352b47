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

// Package elasticsearch holds ElasticsearchSink, a sink connector that
// writes records into Elasticsearch or OpenSearch indices with the `_bulk`
// API: one document per record, its id taken from the record key (or from
// topic+partition+offset), tombstones as deletes, per-item errors sorted
// into "ignore" (version conflicts of a redelivery), "retry" (429, 5xx) and
// "malformed" (the dead letter queue).
//
// The client is plain net/http rather than go-elasticsearch: the v8 client
// refuses every server that does not answer with the header
// `X-Elastic-Product: Elasticsearch`, which OpenSearch (and Elasticsearch
// before 7.14) never send, and the sink needs nothing from it but one POST
// whose retries and timeouts it controls itself. Flushes are synchronous:
// Flush returns only once every record put so far is acknowledged by the
// server, and the runtime commits offsets after it (never the go client's
// asynchronous BulkIndexer, which acknowledges nothing to its caller).
package elasticsearch

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the sink.
const Version = "0.1.0"

// Class is the connector class name.
const Class = "dev.conveyor.connect.elasticsearch.ElasticsearchSinkConnector"

// Configuration keys (Confluent's Elasticsearch sink names where it has one).
const (
	KeyURL               = "connection.url"
	KeyUsername          = "connection.username"
	KeyPassword          = "connection.password"
	KeyAPIKey            = "connection.api.key"
	KeyCAFile            = "connection.ca.file"
	KeyCertFile          = "connection.cert.file"
	KeyKeyFile           = "connection.key.file"
	KeyConnectionTimeout = "connection.timeout.ms"
	KeyReadTimeout       = "read.timeout.ms"
	KeyIndexFormat       = "index.name.format"
	KeyKeyIgnore         = "key.ignore"
	KeyNullValues        = "behavior.on.null.values"
	KeyMalformed         = "behavior.on.malformed.documents"
	KeyBatchSize         = "batch.size"
	KeyMaxBuffered       = "max.buffered.records"
	KeyLinger            = "linger.ms"
	KeyMaxInFlight       = "max.in.flight.requests"
	KeyMaxRetries        = "max.retries"
	KeyRetryBackoff      = "retry.backoff.ms"
)

// Values of behavior.on.null.values and behavior.on.malformed.documents.
const (
	BehaviorIgnore = "ignore"
	BehaviorDelete = "delete"
	BehaviorWarn   = "warn"
	BehaviorFail   = "fail"
)

const group = "Elasticsearch sink"

// Plugin returns the ElasticsearchSink plugin.
func Plugin() plugin.Plugin {
	f := func(name string, t plugin.FieldType, def string, imp plugin.Importance, v plugin.Validator, doc string) plugin.ConfigField {
		return plugin.ConfigField{Name: name, Type: t, Default: def, Group: group, Importance: imp, Validator: v, Doc: doc}
	}
	// n is f for a number field, between min and max.
	n := func(name string, t plugin.FieldType, def string, imp plugin.Importance, min, max float64, doc string) plugin.ConfigField {
		return plugin.ConfigField{Name: name, Type: t, Default: def, Group: group, Importance: imp, Validator: plugin.AtLeast(min), Max: max, Doc: doc}
	}
	fields := []plugin.ConfigField{
		{Name: KeyURL, Type: plugin.TypeList, Required: true, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			DisplayName: "Connection URLs",
			Doc:         "Elasticsearch or OpenSearch URLs (http:// or https://), separated by commas; requests go to them in turn. Credentials belong in connection.username/connection.password or connection.api.key, not in the URL."},
		f(KeyUsername, plugin.TypeString, "", plugin.ImportanceHigh, nil, "User for HTTP Basic authentication (with connection.password)."),
		f(KeyPassword, plugin.TypePassword, "", plugin.ImportanceHigh, nil, "Password for HTTP Basic authentication; use a placeholder (${secret:NAME:KEY})."),
		f(KeyAPIKey, plugin.TypePassword, "", plugin.ImportanceHigh, nil, "API key, in the encoded form Elasticsearch returns (base64 of id:key), sent as Authorization: ApiKey; instead of a user and password. Use a placeholder."),
		f(KeyCAFile, plugin.TypeString, "", plugin.ImportanceMedium, nil, "PEM file of the certificate authorities that sign the server's certificate (https URLs); empty: the system's."),
		f(KeyCertFile, plugin.TypeString, "", plugin.ImportanceMedium, nil, "PEM client certificate for TLS client authentication (with connection.key.file)."),
		f(KeyKeyFile, plugin.TypeString, "", plugin.ImportanceMedium, nil, "PEM private key of connection.cert.file."),
		n(KeyConnectionTimeout, plugin.TypeInt, "5000", plugin.ImportanceLow, 1, 600_000, "Milliseconds to wait for a TCP (and TLS) connection."),
		n(KeyReadTimeout, plugin.TypeInt, "30000", plugin.ImportanceLow, 1, 3_600_000, "Milliseconds one _bulk request may take, response included; a timed-out request is retried."),
		f(KeyIndexFormat, plugin.TypeString, "${topic}", plugin.ImportanceMedium, plugin.NonEmpty(), "Destination index, with ${topic} replaced by the record's topic; the result is lower-cased, as index names must be."),
		f(KeyKeyIgnore, plugin.TypeBoolean, "false", plugin.ImportanceHigh, nil,
			"false: the document id is the record key (string or integer) and the record's offset its external version, so a redelivered or reordered older record is refused by the server as a version conflict, which the sink ignores; true: the id is topic+partition+offset (every record its own document)."),
		f(KeyNullValues, plugin.TypeString, BehaviorFail, plugin.ImportanceMedium, plugin.OneOf(BehaviorIgnore, BehaviorDelete, BehaviorFail),
			"What a record with a null value (a tombstone) does: delete (the document of its key; a missing one is fine), ignore (skipped), fail (handled as a bad record: errors.tolerance and the dead letter queue)."),
		f(KeyMalformed, plugin.TypeString, BehaviorFail, plugin.ImportanceMedium, plugin.OneOf(BehaviorIgnore, BehaviorWarn, BehaviorFail),
			"What a document the server refuses as malformed (status 400: a mapping conflict, a value that does not parse) does: ignore (skipped), warn (skipped and logged, without its contents), fail (handled as a bad record: with errors.tolerance=all it goes to the dead letter queue, with none it fails the task naming the record's topic, partition and offset)."),
		n(KeyBatchSize, plugin.TypeInt, "2000", plugin.ImportanceMedium, 1, 100_000, "Most records in one _bulk request."),
		n(KeyMaxBuffered, plugin.TypeInt, "20000", plugin.ImportanceLow, 1, 1_000_000, "Most records the task holds, buffered or in flight; Put waits while it holds this many. At least batch.size."),
		n(KeyLinger, plugin.TypeInt, "1", plugin.ImportanceLow, 0, 600_000, "Milliseconds a partial batch waits for more records before it is sent (a full batch, or a Flush, sends at once)."),
		n(KeyMaxInFlight, plugin.TypeInt, "5", plugin.ImportanceLow, 1, 100, "Most _bulk requests of one task in flight at once. Order across them is kept by the external versions (key.ignore=false) or needs none (key.ignore=true)."),
		n(KeyMaxRetries, plugin.TypeInt, "5", plugin.ImportanceLow, 0, 1000,
			"Retries of a request that failed with 429, a 5xx or a network error (and of items refused with 429 or 5xx), with exponential backoff. After the last, the records stay in the task and the failure goes to the runtime, which pauses and carries on: an outage is retried through, and no record is dropped."),
		n(KeyRetryBackoff, plugin.TypeInt, "100", plugin.ImportanceLow, 1, 600_000, "Milliseconds before the first retry; each further retry waits twice as long (at most 10 s), with some jitter."),
	}
	return plugin.Plugin{
		Class:        Class,
		Kind:         plugin.KindSink,
		Version:      Version,
		Doc:          "Writes records as documents into Elasticsearch or OpenSearch indices with the _bulk API: ids from keys, tombstones as deletes, version conflicts of redeliveries ignored, malformed documents to the dead letter queue.",
		Spec:         plugin.ConfigSpec{Fields: fields},
		NewConnector: newConnector,
		NewSinkTask:  func() plugin.SinkTask { return &Task{} },
	}
}

// settings is a parsed configuration.
type settings struct {
	urls           []string
	username       string
	password       plugin.Password
	apiKey         plugin.Password
	tls            *tls.Config // nil: no https URL
	connectTimeout time.Duration
	readTimeout    time.Duration
	indexFormat    string
	keyIgnore      bool
	nullValues     string
	malformed      string
	batchSize      int
	maxBuffered    int
	linger         time.Duration
	maxInFlight    int
	maxRetries     int
	retryBackoff   time.Duration
}

func parse(config map[string]string) (*settings, error) {
	cfg, err := Plugin().Spec.Parse(config)
	if err != nil {
		return nil, err
	}
	ms := func(k string) time.Duration { return time.Duration(cfg.Int(k)) * time.Millisecond }
	s := &settings{
		username:       cfg.String(KeyUsername),
		password:       cfg.Password(KeyPassword),
		apiKey:         cfg.Password(KeyAPIKey),
		connectTimeout: ms(KeyConnectionTimeout),
		readTimeout:    ms(KeyReadTimeout),
		indexFormat:    cfg.String(KeyIndexFormat),
		keyIgnore:      cfg.Bool(KeyKeyIgnore),
		nullValues:     strings.ToLower(cfg.String(KeyNullValues)),
		malformed:      strings.ToLower(cfg.String(KeyMalformed)),
		batchSize:      cfg.Int(KeyBatchSize),
		maxBuffered:    cfg.Int(KeyMaxBuffered),
		linger:         ms(KeyLinger),
		maxInFlight:    cfg.Int(KeyMaxInFlight),
		maxRetries:     cfg.Int(KeyMaxRetries),
		retryBackoff:   ms(KeyRetryBackoff),
	}
	var errs []plugin.FieldError
	bad := func(key, msg string, args ...any) {
		errs = append(errs, plugin.FieldError{Name: key, Message: fmt.Sprintf(msg, args...)})
	}
	https := false
	for _, raw := range cfg.List(KeyURL) {
		u, err := url.Parse(raw)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
			// url.Parse's error quotes the URL, which may hold a password.
			bad(KeyURL, "%q is not an http:// or https:// URL with a host, such as https://es.example:9200", redactURL(raw))
		case u.User != nil:
			bad(KeyURL, "%s holds credentials: put them in %s and %s (or %s) instead", redactURL(raw), KeyUsername, KeyPassword, KeyAPIKey)
		case u.RawQuery != "" || u.Fragment != "":
			bad(KeyURL, "%s has a query or fragment: give the server's base URL only", raw)
		default:
			https = https || u.Scheme == "https"
			s.urls = append(s.urls, strings.TrimSuffix(u.String(), "/"))
		}
	}
	if len(s.urls) == 0 && len(errs) == 0 {
		bad(KeyURL, "needs at least one URL, such as https://es.example:9200")
	}
	if (s.username == "") != (s.password.Value() == "") {
		if s.username == "" {
			bad(KeyUsername, "%s is set but %s is not: set both for Basic authentication", KeyPassword, KeyUsername)
		} else {
			bad(KeyPassword, "%s is set but %s is not: set both for Basic authentication", KeyUsername, KeyPassword)
		}
	}
	if s.username != "" && s.apiKey.Value() != "" {
		bad(KeyAPIKey, "set either %s or %s/%s, not both", KeyAPIKey, KeyUsername, KeyPassword)
	}
	if s.keyIgnore && s.nullValues == BehaviorDelete {
		bad(KeyNullValues, "delete needs %s=false: with ids from topic+partition+offset a tombstone names no document", KeyKeyIgnore)
	}
	if s.maxBuffered < s.batchSize {
		bad(KeyMaxBuffered, "%d is less than %s (%d): the task could never fill a batch", s.maxBuffered, KeyBatchSize, s.batchSize)
	}
	if _, err := s.index("t"); err != nil {
		bad(KeyIndexFormat, "%v", err)
	}
	tc, ferrs := tlsConfig(cfg.String(KeyCAFile), cfg.String(KeyCertFile), cfg.String(KeyKeyFile))
	errs = append(errs, ferrs...)
	if https || tc != nil {
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		s.tls = tc
	}
	if len(errs) > 0 {
		return nil, &plugin.ConfigError{Fields: errs}
	}
	return s, nil
}

// tlsConfig loads the CA and client certificate files; nil when none is set.
func tlsConfig(caFile, certFile, keyFile string) (*tls.Config, []plugin.FieldError) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	var errs []plugin.FieldError
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		pool := x509.NewCertPool()
		switch {
		case err != nil:
			errs = append(errs, plugin.FieldError{Name: KeyCAFile, Message: fmt.Sprintf("reading the CA file: %v", err)})
		case !pool.AppendCertsFromPEM(pem):
			errs = append(errs, plugin.FieldError{Name: KeyCAFile, Message: fmt.Sprintf("%s holds no PEM certificate", caFile)})
		default:
			tc.RootCAs = pool
		}
	}
	switch {
	case (certFile == "") != (keyFile == ""):
		name := KeyKeyFile
		if certFile == "" {
			name = KeyCertFile
		}
		errs = append(errs, plugin.FieldError{Name: name, Message: fmt.Sprintf("set both %s and %s for a client certificate", KeyCertFile, KeyKeyFile)})
	case certFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			errs = append(errs, plugin.FieldError{Name: KeyCertFile, Message: fmt.Sprintf("loading the client certificate and key: %v", err)})
		} else {
			tc.Certificates = []tls.Certificate{cert}
		}
	}
	return tc, errs
}

// redactURL hides the password of a URL that has one.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	if i := strings.LastIndexByte(raw, '@'); i >= 0 {
		return "[hidden]" + raw[i:]
	}
	return raw
}

// index returns the destination index of a topic: index.name.format with
// ${topic} replaced, lower-cased, checked against Elasticsearch's rules.
func (s *settings) index(topic string) (string, error) {
	name := strings.ToLower(strings.ReplaceAll(s.indexFormat, "${topic}", topic))
	switch {
	case name == "" || name == "." || name == "..":
		return "", fmt.Errorf("index name %q is not allowed", name)
	case strings.ContainsAny(name, `\/*?"<>| ,#:`):
		return "", fmt.Errorf("index name %q holds one of \\ / * ? \" < > | space , # :", name)
	case strings.HasPrefix(name, "-") || strings.HasPrefix(name, "_") || strings.HasPrefix(name, "+"):
		return "", fmt.Errorf("index name %q starts with -, _ or +", name)
	case len(name) > 255:
		return "", fmt.Errorf("index name %q is longer than 255 bytes", name)
	}
	return name, nil
}
