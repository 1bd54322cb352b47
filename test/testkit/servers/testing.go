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
	"testing"
)

// T starts servers for a test and stops them when it ends; a server that
// cannot start fails the test.
type T struct{ t testing.TB }

// For returns the test's server starter.
func For(t testing.TB) T { return T{t} }

// Redis starts a redis-server (see [StartRedis]); opts.Dir defaults to a
// temporary folder.
func (s T) Redis(opts RedisOptions) *Redis {
	s.t.Helper()
	if opts.Dir == "" {
		opts.Dir = s.t.TempDir()
	}
	r, err := StartRedis(context.Background(), opts)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		_ = r.Kill()
		if s.t.Failed() {
			s.t.Logf("redis-server log:\n%s", r.Log())
		}
	})
	return r
}

// RedisCluster starts a Redis Cluster of n masters (see [StartRedisCluster]).
func (s T) RedisCluster(n int) *RedisCluster {
	s.t.Helper()
	rc, err := StartRedisCluster(context.Background(), s.t.TempDir(), n)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(rc.Kill)
	return rc
}

// S3 starts a versitygw server (see [StartS3]) in a temporary folder.
func (s T) S3() *S3 {
	s.t.Helper()
	g, err := StartS3(context.Background(), s.t.TempDir())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		_ = g.Kill()
		if s.t.Failed() {
			s.t.Logf("versitygw log:\n%s", g.Log())
		}
	})
	return g
}

// SchemaRegistry starts a schema registry (see [StartSchemaRegistry]).
func (s T) SchemaRegistry(opts SchemaRegistryOptions) *SchemaRegistry {
	s.t.Helper()
	r, err := StartSchemaRegistry(context.Background(), s.t.TempDir(), opts)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		r.Close()
		if s.t.Failed() {
			s.t.Logf("schema registry log:\n%s", r.Log())
		}
	})
	return r
}
