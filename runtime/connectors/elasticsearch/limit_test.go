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

package elasticsearch

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// A server of the tenant's choosing that answers without end: the sink
// reads at most maxResponse bytes of it and fails (the same request
// would get the same answer) instead of reading until the worker runs
// out of memory. A stand-in server: no Elasticsearch answers this way.
func TestResponseReadThroughLimitStandin(t *testing.T) {
	chunk := []byte(strings.Repeat(`{"items":[`, 1<<12))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil { // until the client goes away
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	s, err := parse(map[string]string{KeyURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(s)
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.ping(ctx)
	if !errors.As(err, new(errTooLarge)) || !strings.Contains(err.Error(), "larger than 67108864 bytes") {
		t.Fatalf("ping of an endless answer: %v", err)
	}
	// A _bulk answer that large fails the request for good, not retried.
	out := c.send(ctx, []op{{lines: []byte(`{"index":{"_index":"i"}}` + "\n{}\n")}}, new(bytes.Buffer))
	if out.err == nil || plugin.IsRetriable(out.err) || !strings.Contains(out.err.Error(), "larger than") {
		t.Fatalf("_bulk with an endless answer: %v", out.err)
	}
}
