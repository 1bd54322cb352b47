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

package worker

import (
	"context"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/rest"
)

// SessionKeyTTL is how long a session key signs worker-to-worker requests
// before the leader writes a new one (Kafka Connect's
// inter.worker.key.ttl.ms default).
const SessionKeyTTL = time.Hour

// sessionKeyCheck is how often the leader checks the key's age.
const sessionKeyCheck = 10 * time.Second

// sessionKeys gives the REST server the keys from the config topic: the
// newest signs, it and the one before it verify.
func (w *Worker) sessionKeys() rest.SessionKeys {
	return func() ([]byte, [][]byte, bool) {
		cur, prev, ok := w.configs.SessionKeys()
		if !ok {
			return nil, nil, false
		}
		verify := [][]byte{cur.Key}
		if prev != nil {
			verify = append(verify, prev.Key)
		}
		return cur.Key, verify, true
	}
}

// rotateSessionKeys runs on every worker of a group: while this worker
// leads, it writes a session key when there is none or the current one is
// older than SessionKeyTTL (at once after each assignment, then every
// sessionKeyCheck).
func (w *Worker) rotateSessionKeys() {
	t := time.NewTicker(sessionKeyCheck)
	defer t.Stop()
	for {
		select {
		case <-w.stopped:
			return
		case <-t.C:
		case <-w.keyNow:
		}
		if !w.herder.IsLeader() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		wrote, err := w.configs.RotateSessionKey(ctx, time.Now(), SessionKeyTTL)
		cancel()
		switch {
		case err != nil:
			w.log.Warn("writing a new session key", "err", err)
		case wrote:
			w.log.Info("wrote a new session key to the config topic (signs worker-to-worker requests)", "ttl", SessionKeyTTL)
		}
	}
}
