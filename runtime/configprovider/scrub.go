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

package configprovider

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// MinScrubLength is the shortest resolved value that Scrub hides. Shorter
// values (a port, "true") would turn every message into noise, and a secret
// that short is no secret.
const MinScrubLength = 4

// maxScrubValues bounds the values one resolver remembers; the oldest are
// forgotten first (a worker resolves its connectors' values again at each
// start, so a live value comes back).
const maxScrubValues = 4096

// scrubSet is every value a resolver produced, with the placeholder that
// produced it. Old values stay after a rotation: a message written before
// the rotation must be hidden too.
type scrubSet struct {
	mu sync.RWMutex
	// forms maps each way a value can be written (as is, JSON-escaped,
	// Go-quoted) to the placeholder shown instead.
	forms map[string]string
	order []string
	// sorted is forms' keys, longest first (a value that contains another
	// is replaced whole); nil when it must be rebuilt.
	sorted []string
	// onNew, when set, hears each new value and its placeholder (outside
	// the lock).
	onNew func(value, placeholder string)
}

func (s *scrubSet) add(value, placeholder string) {
	if len(value) < MinScrubLength {
		return
	}
	s.mu.RLock()
	_, known := s.forms[value]
	s.mu.RUnlock()
	if known {
		return
	}
	s.mu.Lock()
	onNew := s.onNew
	defer func() {
		s.mu.Unlock()
		if onNew != nil {
			onNew(value, placeholder)
		}
	}()
	if s.forms == nil {
		s.forms = map[string]string{}
	}
	for _, f := range valueForms(value) {
		if _, ok := s.forms[f]; !ok {
			s.forms[f] = placeholder
			s.order = append(s.order, f)
		}
	}
	for len(s.order) > maxScrubValues {
		delete(s.forms, s.order[0])
		s.order = s.order[1:]
	}
	s.sorted = nil
}

func valueForms(v string) []string {
	forms := []string{v}
	// A value of several lines (a PEM key) may be printed a line at a time
	// (a panic value, a multi-line log message): each line is hidden too.
	if strings.ContainsAny(v, "\n") {
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimSpace(line); len(line) >= MinScrubLength {
				forms = append(forms, line)
			}
		}
	}
	if b, err := json.Marshal(v); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	q := strconv.Quote(v)
	forms = append(forms, q[1:len(q)-1])
	return forms
}

func (s *scrubSet) scrub(msg string) string {
	s.mu.RLock()
	if len(s.forms) == 0 {
		s.mu.RUnlock()
		return msg
	}
	sorted := s.sorted
	s.mu.RUnlock()
	if sorted == nil {
		s.mu.Lock()
		if s.sorted == nil {
			s.sorted = make([]string, 0, len(s.forms))
			for f := range s.forms {
				s.sorted = append(s.sorted, f)
			}
			sort.Slice(s.sorted, func(i, j int) bool {
				if len(s.sorted[i]) != len(s.sorted[j]) {
					return len(s.sorted[i]) > len(s.sorted[j])
				}
				return s.sorted[i] < s.sorted[j]
			})
		}
		sorted = s.sorted
		s.mu.Unlock()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range sorted {
		if strings.Contains(msg, f) {
			if ph, ok := s.forms[f]; ok {
				msg = strings.ReplaceAll(msg, f, ph)
			}
		}
	}
	return msg
}

// Scrub returns msg with every value this resolver ever resolved, for any
// connector (of at least MinScrubLength bytes, as is, JSON-escaped or
// Go-quoted), replaced by the placeholder it came from. It is for outputs
// every connector shares: logs, panic output, metrics, REST answers that
// belong to no connector. A nil resolver returns msg.
func (r *Resolver) Scrub(msg string) string {
	if r == nil {
		return msg
	}
	return r.seen.scrub(msg)
}

// Hide makes Scrub hide value (and each of its lines) as label, though no
// placeholder resolved it: the worker hides its own credentials (REST and
// metrics tokens, SASL password, TLS key, ServiceAccount token) in every
// output all connectors share. A nil resolver does nothing.
func (r *Resolver) Hide(value, label string) {
	if r == nil {
		return
	}
	r.seen.add(strings.TrimSpace(value), label)
}

// OnHidden makes f hear every value Scrub hides from now on, with its
// placeholder or label, right after it is learnt and before the value is
// handed to anyone: the worker's output relay scrubs what the process
// writes to stdout and stderr (a panic's report included) with them.
func (r *Resolver) OnHidden(f func(value, label string)) {
	r.seen.mu.Lock()
	defer r.seen.mu.Unlock()
	r.seen.onNew = f
}

// ScrubFor returns msg with the values resolved for connector hidden, and
// no other connector's: it is for what belongs to that connector (its
// config and task configs, its status traces, its dead letter queue
// headers, its REST answers), so a value another connector resolved never
// rewrites this connector's data. A nil resolver returns msg.
func (r *Resolver) ScrubFor(connector, msg string) string {
	if r == nil {
		return msg
	}
	r.mu.RLock()
	s := r.byConnector[connector]
	r.mu.RUnlock()
	if s == nil {
		return msg
	}
	return s.scrub(msg)
}

// ScrubConfig applies Scrub to every value of config (a copy).
func (r *Resolver) ScrubConfig(config map[string]string) map[string]string {
	out := make(map[string]string, len(config))
	for k, v := range config {
		out[k] = r.Scrub(v)
	}
	return out
}

// connectorSet returns connector's scrub set, made on first use.
func (r *Resolver) connectorSet(connector string) *scrubSet {
	r.mu.RLock()
	s := r.byConnector[connector]
	r.mu.RUnlock()
	if s != nil {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byConnector == nil {
		r.byConnector = map[string]*scrubSet{}
	}
	if s = r.byConnector[connector]; s == nil {
		s = &scrubSet{}
		r.byConnector[connector] = s
	}
	return s
}
