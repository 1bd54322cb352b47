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

package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"
)

// sessionKeyKey keys the workers' session key in the config topic, as
// Kafka Connect does (KIP-507).
const sessionKeyKey = "session-key"

// SessionKeyAlgorithm is the MAC the session key signs requests with.
const SessionKeyAlgorithm = "HmacSHA256"

// SessionKey is the secret the leader shares with the members of its group
// through the config topic: a worker proves with it that a request it
// forwards (or task configs it sends) comes from a member. Readers of the
// config topic are the cluster's own workers (the topic is the cluster's,
// and Kafka ACLs keep it so).
type SessionKey struct {
	Key       []byte
	Algorithm string
	Created   time.Time
}

type sessionKeyValue struct {
	Key       []byte `json:"key"` // base64 in JSON
	Algorithm string `json:"algorithm"`
	CreatedMs int64  `json:"creation-timestamp"`
}

func (s *ConfigStore) applySessionKey(value []byte, tombstone bool) {
	var v sessionKeyValue
	if tombstone || json.Unmarshal(value, &v) != nil || len(v.Key) < 16 {
		return
	}
	if s.sessionKey != nil && v.CreatedMs <= s.sessionKey.Created.UnixMilli() {
		return
	}
	if s.sessionKey != nil {
		prev := *s.sessionKey
		s.prevSessionKey = &prev
	}
	s.sessionKey = &SessionKey{Key: v.Key, Algorithm: v.Algorithm, Created: time.UnixMilli(v.CreatedMs)}
}

// SessionKeys returns the current session key and the one before it (kept
// so that a request signed just before a rotation still verifies); ok is
// false until a leader wrote one.
func (s *ConfigStore) SessionKeys() (current SessionKey, previous *SessionKey, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessionKey == nil {
		return SessionKey{}, nil, false
	}
	if s.prevSessionKey != nil {
		p := *s.prevSessionKey
		previous = &p
	}
	return *s.sessionKey, previous, true
}

// RotateSessionKey writes a new random session key when there is none or
// the current one is older than ttl, and reports whether it wrote one. Only
// the leader calls it.
func (s *ConfigStore) RotateSessionKey(ctx context.Context, now time.Time, ttl time.Duration) (bool, error) {
	if cur, _, ok := s.SessionKeys(); ok && now.Sub(cur.Created) < ttl {
		return false, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return false, fmt.Errorf("making a session key: %w", err)
	}
	b, _ := json.Marshal(sessionKeyValue{Key: key, Algorithm: SessionKeyAlgorithm, CreatedMs: now.UnixMilli()})
	if err := s.log.SendAndApply(ctx, []byte(sessionKeyKey), b); err != nil {
		return false, fmt.Errorf("writing the session key to the config topic: %w", err)
	}
	return true, nil
}
