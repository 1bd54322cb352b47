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
	"context"
	"log/slog"
)

// ScrubHandler wraps a slog handler so that the message and every string,
// error and formatted attribute pass through scrub before h sees them.
func ScrubHandler(h slog.Handler, scrub func(string) string) slog.Handler {
	return &scrubHandler{h: h, scrub: scrub}
}

type scrubHandler struct {
	h     slog.Handler
	scrub func(string) string
}

func (s *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }

func (s *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, s.scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(s.attr(a))
		return true
	})
	return s.h.Handle(ctx, out)
}

func (s *scrubHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, s.scrub(v.String()))
	case slog.KindGroup:
		g := v.Group()
		as := make([]any, 0, len(g))
		for _, ga := range g {
			as = append(as, s.attr(ga))
		}
		return slog.Group(a.Key, as...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, s.scrub(x.Error()))
		case nil:
			return a
		default:
			return slog.String(a.Key, s.scrub(slog.AnyValue(x).String()))
		}
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}

func (s *scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = s.attr(a)
	}
	return &scrubHandler{h: s.h.WithAttrs(out), scrub: s.scrub}
}

func (s *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{h: s.h.WithGroup(name), scrub: s.scrub}
}
