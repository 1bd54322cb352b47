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

package servers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// EnvRedisServer names the variable that points at a redis-server binary;
// without it redis-server is looked up in PATH.
const EnvRedisServer = "CONVEYOR_REDIS_SERVER"

// RedisOptions tune a Redis server.
type RedisOptions struct {
	// Dir holds the log (and the append-only file). Required.
	Dir string
	// Durable turns on the append-only file with an fsync per write, so
	// that a server killed and started again keeps every write it
	// acknowledged (for outage tests). Off: no persistence at all.
	Durable bool
	// Password, when set, is required of clients (requirepass).
	Password string
	// TLSCert and TLSKey, when set, make the server speak only TLS with
	// this certificate and key (PEM files); TLSCA is the CA file clients
	// verify it with.
	TLSCert, TLSKey, TLSCA string
}

// Redis is a running redis-server.
type Redis struct {
	process
	// Addr is host:port.
	Addr     string
	Password string
	tlsCA    string
}

// StartRedis starts redis-server on a free loopback port with no
// persistence (--save ”), or with an fsync'd append-only file when
// opts.Durable, and waits until it answers PING.
func StartRedis(ctx context.Context, opts RedisOptions) (*Redis, error) {
	return startRedis(ctx, opts)
}

func startRedis(ctx context.Context, opts RedisOptions, extra ...string) (*Redis, error) {
	bin, err := findBinary(EnvRedisServer, "redis-server not found: run hack/redis.sh (make test does)", "redis-server")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	portArgs := []string{"--port", itoa(port)}
	if opts.TLSCert != "" {
		portArgs = []string{"--port", "0", "--tls-port", itoa(port), "--tls-cert-file", opts.TLSCert, "--tls-key-file", opts.TLSKey, "--tls-auth-clients", "no"}
	}
	args := []string{"--bind", "127.0.0.1", "--save", "", "--daemonize", "no",
		"--dir", opts.Dir, "--protected-mode", "no", "--loglevel", "warning"}
	if opts.Durable {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	if opts.Password != "" {
		args = append(args, "--requirepass", opts.Password)
	}
	args = append(append(portArgs, args...), extra...)
	r := &Redis{Addr: fmt.Sprintf("127.0.0.1:%d", port), Password: opts.Password, tlsCA: opts.TLSCA}
	r.process = process{name: "redis-server " + r.Addr, bin: bin, args: args, log: filepath.Join(opts.Dir, "redis.log")}
	r.ready = func(ctx context.Context) error {
		c := r.Client()
		defer c.Close()
		return c.Ping(ctx).Err()
	}
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// URL is the server's redis:// (or rediss://) URL, without the password.
func (r *Redis) URL() string {
	if r.tlsCA != "" {
		return "rediss://" + r.Addr
	}
	return "redis://" + r.Addr
}

// Client returns a new client of the server (database 0).
func (r *Redis) Client() *goredis.Client {
	o := &goredis.Options{Addr: r.Addr, Password: r.Password, MaxRetries: -1}
	if r.tlsCA != "" {
		pool := x509.NewCertPool()
		if pem, err := os.ReadFile(r.tlsCA); err == nil {
			pool.AppendCertsFromPEM(pem)
		}
		o.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return goredis.NewClient(o)
}

// RedisCluster is a Redis Cluster of masters without replicas.
type RedisCluster struct {
	Nodes []*Redis
}

// StartRedisCluster starts n redis-servers in cluster mode (folders under
// dir), joins them with redis-cli --cluster create (the slots spread over
// all of them) and waits until every node says cluster_state:ok.
func StartRedisCluster(ctx context.Context, dir string, n int) (*RedisCluster, error) {
	cli, err := findBinary("CONVEYOR_REDIS_CLI", "redis-cli not found: run hack/redis.sh (make test does)", "redis-cli")
	if err != nil {
		return nil, err
	}
	rc := &RedisCluster{}
	addrs := []string{}
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("node%d", i))
		r, err := startRedis(ctx, RedisOptions{Dir: d}, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(d, "nodes.conf"), "--cluster-node-timeout", "2000")
		if err != nil {
			rc.Kill()
			return nil, err
		}
		rc.Nodes = append(rc.Nodes, r)
		addrs = append(addrs, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		rc.Kill()
		return nil, fmt.Errorf("servers: redis-cli --cluster create: %w\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range rc.Nodes {
		for {
			c := r.Client()
			info, err := c.ClusterInfo(ctx).Result()
			c.Close()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				rc.Kill()
				return nil, fmt.Errorf("servers: Redis Cluster not ok within 30s (%v): %s", err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return rc, nil
}

// URL is the cluster's redis:// URL: the first node, the others as addr=.
func (rc *RedisCluster) URL() string {
	u := "redis://" + rc.Nodes[0].Addr
	for i, r := range rc.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + r.Addr
	}
	return u
}

// Kill kills every node.
func (rc *RedisCluster) Kill() {
	for _, r := range rc.Nodes {
		_ = r.Kill()
	}
}
