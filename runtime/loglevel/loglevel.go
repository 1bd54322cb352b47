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

// Package loglevel changes the worker's log levels at run time, per named
// logger, as Kafka Connect's /admin/loggers does (KIP-495): a record's
// logger is its "logger" attribute (or "component", or "connector.<name>"
// for a connector's and its tasks' records); a level set on a name applies
// to the names under it ("connector" covers "connector.orders"), and
// "root" to all the others.
package loglevel

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Root is the logger every name falls back to.
const Root = "root"

// Kafka's (log4j's) level names and their slog levels. TRACE and ALL sit
// below DEBUG, FATAL and OFF above ERROR.
var levels = []struct {
	name  string
	level slog.Level
}{
	{"ALL", slog.Level(-12)},
	{"TRACE", slog.Level(-8)},
	{"DEBUG", slog.LevelDebug},
	{"INFO", slog.LevelInfo},
	{"WARN", slog.LevelWarn},
	{"ERROR", slog.LevelError},
	{"FATAL", slog.Level(12)},
	{"OFF", slog.Level(1 << 20)},
}

// Lowest is the level to give the handler that Levels wraps, so that
// Levels alone decides.
const Lowest = slog.Level(-12)

// ParseLevel reads a Kafka level name (any case).
func ParseLevel(s string) (slog.Level, error) {
	for _, l := range levels {
		if strings.EqualFold(strings.TrimSpace(s), l.name) {
			return l.level, nil
		}
	}
	return 0, fmt.Errorf("invalid log level %q: use one of ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF", s)
}

// LevelName is the Kafka name of a level: the highest named level at or
// below it.
func LevelName(l slog.Level) string {
	name := levels[0].name
	for _, n := range levels {
		if n.level <= l {
			name = n.name
		}
	}
	return name
}

// Logger is one named logger's level as GET /admin/loggers shows it.
type Logger struct {
	Level slog.Level
	// LastModified is when the level was last set at run time (zero: the
	// start-up level).
	LastModified time.Time
}

// Levels holds the level of every named logger. The zero value is not
// usable: use New.
type Levels struct {
	mu    sync.Mutex
	set   map[string]Logger
	epoch atomic.Uint64 // bumped by every change, so handlers re-resolve
	now   func() time.Time
}

// New returns Levels with root at the given level.
func New(root slog.Level) *Levels {
	return &Levels{set: map[string]Logger{Root: {Level: root}}, now: time.Now}
}

// Set sets name's level now: see SetAt.
func (l *Levels) Set(name string, level slog.Level) []string {
	return l.SetAt(name, level, l.now())
}

// SetAt sets name's level, and the level of every logger under it that has
// a level of its own (as log4j's Configurator.setAllLevels does), with at
// as their last change. It returns the names whose level it changed,
// sorted, as Kafka Connect 4 does: a logger already at the level keeps its
// last change. Setting root sets every logger.
func (l *Levels) SetAt(name string, level slog.Level, at time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := []string{}
	for n, lg := range l.set {
		if (n == name || under(n, name)) && lg.Level != level {
			changed = append(changed, n)
		}
	}
	if _, ok := l.set[name]; !ok {
		changed = append(changed, name)
	}
	for _, n := range changed {
		l.set[n] = Logger{Level: level, LastModified: at}
	}
	l.epoch.Add(1)
	sort.Strings(changed)
	return changed
}

// Get returns the logger's own level, when one was set (root always is).
func (l *Levels) Get(name string) (Logger, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lg, ok := l.set[name]
	return lg, ok
}

// All returns every logger with a level of its own, root included.
func (l *Levels) All() map[string]Logger {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]Logger, len(l.set))
	for n, lg := range l.set {
		out[n] = lg
	}
	return out
}

// Effective is the level that applies to name: its own, else the nearest
// dotted parent's, else root's.
func (l *Levels) Effective(name string) slog.Level {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := name; n != ""; {
		if lg, ok := l.set[n]; ok {
			return lg.Level
		}
		i := strings.LastIndexByte(n, '.')
		if i < 0 {
			break
		}
		n = n[:i]
	}
	return l.set[Root].Level
}

// under reports whether n is child below parent in the dotted hierarchy
// (everything is under root).
func under(n, parent string) bool {
	return parent == Root || strings.HasPrefix(n, parent+".")
}

// Handler wraps h (give it level Lowest) so that each record passes when
// its logger's level allows it.
func (l *Levels) Handler(h slog.Handler) slog.Handler {
	return &handler{levels: l, next: h, name: Root}
}

type handler struct {
	levels *Levels
	next   slog.Handler
	name   string
	// cache of the effective level for the epoch it was resolved in.
	cache atomic.Pointer[cached]
}

type cached struct {
	epoch uint64
	level slog.Level
}

func (h *handler) level() slog.Level {
	e := h.levels.epoch.Load()
	if c := h.cache.Load(); c != nil && c.epoch == e {
		return c.level
	}
	lv := h.levels.Effective(h.name)
	h.cache.Store(&cached{epoch: e, level: lv})
	return lv
}

func (h *handler) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= h.level() && h.next.Enabled(ctx, lv)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	name := h.name
	for _, a := range attrs {
		switch a.Key {
		case "logger", "component":
			name = a.Value.String()
		case "connector":
			if name == Root {
				name = Connector + "." + a.Value.String()
			}
		}
	}
	return &handler{levels: h.levels, next: h.next.WithAttrs(attrs), name: name}
}

func (h *handler) WithGroup(g string) slog.Handler {
	return &handler{levels: h.levels, next: h.next.WithGroup(g), name: h.name}
}
