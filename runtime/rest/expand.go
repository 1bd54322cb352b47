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

package rest

import (
	"context"
	"errors"
	"net/http"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// listConnectors is GET /connectors: the names, or with expand=status and
// expand=info (Kafka's) and expand=limits and expand=topics (Conveyor's)
// one entry per connector, so that a client reads a whole cluster in one
// call instead of several per connector.
func (s *Server) listConnectors(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	names, err := s.herder.ListConnectors(ctx)
	if err != nil {
		return reply{}, err
	}
	expand, has := r.URL.Query()["expand"]
	if !has {
		if names == nil {
			names = []string{}
		}
		return ok(names)
	}
	out := make(map[string]connectapi.ConnectorExpansion, len(names))
	for _, name := range names {
		var e connectapi.ConnectorExpansion
		gone := false
		// A connector deleted while we list is left out, as Kafka does.
		keep := func(err error) (bool, error) {
			if errors.Is(err, connectapi.ErrNotFound) {
				gone = true
				return false, nil
			}
			return err == nil, err
		}
		for _, x := range expand {
			switch x {
			case "status":
				st, err := s.herder.ConnectorStatus(ctx, name)
				if ok, err := keep(err); err != nil {
					return reply{}, err
				} else if ok {
					e.Status = &st
				}
			case "info":
				info, err := s.herder.ConnectorInfo(ctx, name)
				if ok, err := keep(err); err != nil {
					return reply{}, err
				} else if ok {
					e.Info = &info
				}
			case "limits":
				l, err := s.herder.Limits(ctx, name)
				if ok, err := keep(err); err != nil {
					return reply{}, err
				} else if ok {
					e.Limits = &l
				}
			case "topics":
				t, err := s.herder.ActiveTopics(ctx, name)
				if ok, err := keep(err); err != nil {
					return reply{}, err
				} else if ok {
					e.Topics = &t
				}
			}
		}
		if !gone {
			out[name] = e
		}
	}
	return ok(out)
}
