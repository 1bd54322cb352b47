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

// Package redis holds RedisSink, a connector that writes records into
// Redis: each record becomes SET key value (a tombstone DEL key), or a
// hash per record, or an entry of a stream; with an optional TTL. Writes
// are pipelined per batch on one writer goroutine, in put order, so the
// last write of a key wins in partition order and a redelivered record
// writes the same value again.
package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the sink.
const Version = "0.1.0"

// Class is the connector class name.
const Class = "dev.conveyor.connect.redis.RedisSinkConnector"

// Configuration keys.
const (
	KeyURL       = "redis.url"
	KeyUsername  = "redis.username"
	KeyPassword  = "redis.password"
	KeyDatabase  = "redis.database"
	KeyCluster   = "redis.cluster.enabled"
	KeyTLSCAFile = "redis.tls.ca.file"
	KeyMode      = "redis.mode"
	KeyPrefix    = "redis.key.prefix"
	KeyTTL       = "redis.ttl.ms"
	KeyStream    = "redis.stream.key"
	KeyBatchSize = "redis.batch.size"
	KeyTimeout   = "redis.timeout.ms"
)

// Write modes.
const (
	ModeString = "string"
	ModeHash   = "hash"
	ModeStream = "stream"
)

const group = "Redis"

// Plugin returns the RedisSink plugin.
func Plugin() plugin.Plugin {
	fields := []plugin.ConfigField{
		{Name: KeyURL, Type: plugin.TypeString, Required: true, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			DisplayName: "Redis URL", Validator: plugin.NonEmpty(),
			Doc: "redis://host:port/db, or rediss://host:port/db for TLS. With redis.cluster.enabled=true, one node's URL with the others as addr= parameters (redis://node1:6379?addr=node2:6379). Put the password in redis.password, usually as a ${secret:<name>:<key>} placeholder, not in the URL."},
		{Name: KeyUsername, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthMedium,
			DisplayName: "User", Doc: "ACL user name (Redis 6 or later); overrides the URL's."},
		{Name: KeyPassword, Type: plugin.TypePassword, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			DisplayName: "Password", Doc: "Password (AUTH), usually a ${secret:<name>:<key>} placeholder; overrides the URL's. Never logged."},
		{Name: KeyDatabase, Type: plugin.TypeInt, Default: "-1", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Database", Validator: plugin.AtLeast(-1), Max: 1 << 20,
			Doc: "Database number (SELECT); -1 takes the URL's path (default 0). A Redis cluster has only database 0."},
		{Name: KeyCluster, Type: plugin.TypeBoolean, Default: "false", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Cluster mode", Doc: "Talk to a Redis Cluster: keys are routed to the node owning their slot, and MOVED and ASK redirections are followed."},
		{Name: KeyTLSCAFile, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthLong,
			DisplayName: "TLS CA file", Doc: "PEM file of the certificate authorities that sign the server's certificate, for rediss:// URLs (default: the system's)."},
		{Name: KeyMode, Type: plugin.TypeString, Default: ModeString, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Mode", Validator: plugin.OneOf(ModeString, ModeHash, ModeStream), Recommended: []string{ModeString, ModeHash, ModeStream},
			Doc: "string: SET key value (strings and bytes as they are, anything else as JSON); hash: the key holds a hash of the value's fields (a struct or a JSON object), replaced by each record; stream: XADD to redis.stream.key with the fields key, value, topic, partition and offset (at-least-once: a redelivered record is added again). A tombstone (null value) deletes the key in string and hash mode and adds an entry without a value in stream mode."},
		{Name: KeyPrefix, Type: plugin.TypeString, Default: "", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthMedium,
			DisplayName: "Key prefix", Doc: "Prepended to every record key, for example orders: ."},
		{Name: KeyTTL, Type: plugin.TypeLong, Default: "0", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "TTL (ms)", Validator: plugin.AtLeast(0), Max: 365 * 24 * 3600 * 1000,
			Doc: "Time to live of each written key in milliseconds (SET ... PX, PEXPIRE for hashes); 0 keeps keys forever. Every write of a key starts its TTL again."},
		{Name: KeyStream, Type: plugin.TypeString, Default: "${topic}", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthMedium,
			DisplayName: "Stream key", Validator: plugin.NonEmpty(),
			Doc: "redis.mode=stream: the stream written to, with ${topic} replaced by the record's topic (after redis.key.prefix)."},
		{Name: KeyBatchSize, Type: plugin.TypeInt, Default: "2000", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			DisplayName: "Batch size", Validator: plugin.AtLeast(1), Max: 100_000,
			Doc: "Most records one pipeline writes. Records are written in the background as they come, one pipeline at a time, so batches grow with the load; Put waits while this many records wait."},
		{Name: KeyTimeout, Type: plugin.TypeLong, Default: "5000", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			DisplayName: "Timeout (ms)", Validator: plugin.AtLeast(100), Max: 600_000,
			Doc: "Dial, read and write timeout of the connection. A pipeline that fails on the network or on a server that is loading or read-only is retried with backoff until it succeeds."},
	}
	return plugin.Plugin{
		Class:   Class,
		Kind:    plugin.KindSink,
		Version: Version,
		Doc:     "Writes records into Redis: SET/DEL per key, a hash per record or stream entries, with an optional TTL, pipelined per batch.",
		Spec:    plugin.ConfigSpec{Fields: fields},
		NewConnector: func() plugin.Connector {
			return &connector{plugin.PartitionSinkConnector{Fallback: KeyURL, Parse: func(c map[string]string) error { _, err := parse(c); return err }, Check: check}}
		},
		NewSinkTask: func() plugin.SinkTask { return &Task{} },
	}
}

type settings struct {
	mode      string
	prefix    string
	ttl       time.Duration
	stream    string
	batchSize int
	cluster   bool
	single    *goredis.Options
	nodes     *goredis.ClusterOptions
}

// parse checks the configuration and builds the client options. Errors
// name the key and never repeat the URL (it may hold a password).
func parse(config map[string]string) (*settings, error) {
	cfg, err := Plugin().Spec.Parse(config)
	if err != nil {
		return nil, err
	}
	s := &settings{
		mode:      strings.ToLower(cfg.String(KeyMode)),
		prefix:    cfg.String(KeyPrefix),
		ttl:       time.Duration(cfg.Long(KeyTTL)) * time.Millisecond,
		stream:    cfg.String(KeyStream),
		batchSize: cfg.Int(KeyBatchSize),
		cluster:   cfg.Bool(KeyCluster),
	}
	timeout := time.Duration(cfg.Long(KeyTimeout)) * time.Millisecond
	fail := func(key, msg string) error {
		return &plugin.ConfigError{Fields: []plugin.FieldError{{Name: key, Message: msg}}}
	}
	raw := strings.TrimSpace(cfg.String(KeyURL))
	if !strings.HasPrefix(raw, "redis://") && !strings.HasPrefix(raw, "rediss://") && !strings.HasPrefix(raw, "unix://") {
		return nil, fail(KeyURL, "want a redis://host:port or rediss://host:port URL (rediss for TLS)")
	}
	var tlsCfg **tls.Config
	if s.cluster {
		o, err := goredis.ParseClusterURL(raw)
		if err != nil {
			return nil, fail(KeyURL, "not a Redis cluster URL: "+scrubURLError(err))
		}
		if db := cfg.Int(KeyDatabase); db > 0 {
			return nil, fail(KeyDatabase, "a Redis Cluster has only database 0: remove redis.database or set it to 0")
		}
		if u := cfg.String(KeyUsername); u != "" {
			o.Username = u
		}
		if p := cfg.Password(KeyPassword).Value(); p != "" {
			o.Password = p
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		s.nodes, tlsCfg = o, &o.TLSConfig
	} else {
		o, err := goredis.ParseURL(raw)
		if err != nil {
			return nil, fail(KeyURL, "not a Redis URL: "+scrubURLError(err))
		}
		if db := cfg.Int(KeyDatabase); db >= 0 {
			o.DB = db
		}
		if u := cfg.String(KeyUsername); u != "" {
			o.Username = u
		}
		if p := cfg.Password(KeyPassword).Value(); p != "" {
			o.Password = p
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		s.single, tlsCfg = o, &o.TLSConfig
	}
	if ca := cfg.String(KeyTLSCAFile); ca != "" {
		if *tlsCfg == nil {
			return nil, fail(KeyTLSCAFile, "redis.tls.ca.file needs a rediss:// URL (TLS)")
		}
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fail(KeyTLSCAFile, fmt.Sprintf("reading the CA file: %v", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fail(KeyTLSCAFile, "no PEM certificate in "+ca)
		}
		(*tlsCfg).RootCAs = pool
	}
	return s, nil
}

// scrubURLError keeps go-redis's reason but drops anything after a colon
// that could quote the URL.
func scrubURLError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "redis://"); i >= 0 {
		msg = msg[:i] + "(URL not shown)"
	}
	if i := strings.Index(msg, "rediss://"); i >= 0 {
		msg = msg[:i] + "(URL not shown)"
	}
	return msg
}

// client opens a client (connections are made on first use).
func (s *settings) client() goredis.UniversalClient {
	if s.cluster {
		return goredis.NewClusterClient(s.nodes)
	}
	return goredis.NewClient(s.single)
}

// check pings the server with the configured credentials.
func check(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parse(config)
	if err != nil {
		return plugin.AsFieldErrors(err, KeyURL)
	}
	c := s.client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		key := KeyURL
		if strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "NOAUTH") || strings.Contains(err.Error(), "AUTH") {
			key = KeyPassword
		}
		return []plugin.FieldError{{Name: key, Message: fmt.Sprintf("connecting to Redis: %v", err)}}
	}
	return nil
}

// connector is the connector: its tasks share the topics' partitions.
type connector struct{ plugin.PartitionSinkConnector }

// ToleratesShareGroup: no. In the set and hash modes the last write of a
// key wins, and Redis has no version to compare: an older record
// delivered after a newer one would overwrite it. In the stream mode
// entries are appended in delivery order, which readers of a stream take
// for the records' order.
func (*connector) ToleratesShareGroup(map[string]string) (bool, string) {
	return false, "the Redis sink's last write of a key wins (set, hash) or its stream keeps delivery order, so an older record delivered after a newer one would overwrite or follow it; use consumer.group.type=consumer"
}
