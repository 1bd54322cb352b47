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
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestDecoding sends any method, path and body to the REST handler
// (real routing, decoding and error mapping, over the in-memory herder of
// these tests): it never panics and never answers 500, because a client
// mistake is a 4xx.
func FuzzRequestDecoding(f *testing.F) {
	for _, s := range [][3]string{
		{"PUT", "/connectors/sink-a/config", `{"connector.class":"` + fakeSinkClass + `","topics":"t"}`},
		{"POST", "/connectors", `{"name":"x","config":{"connector.class":"` + fakeSinkClass + `"}}`},
		{"POST", "/connectors", `{"name":"x","config":null}`},
		{"PUT", "/connectors/a/config", `[1,2]`},
		{"PUT", "/connector-plugins/FileSink/config/validate", `{"a":1}`},
		{"POST", "/connectors/sink-a/restart?includeTasks=true&onlyFailed=x", ``},
		{"PATCH", "/connectors/sink-a/config", `{"topics":null}`},
		{"PUT", "/connectors/sink-a/pause", ``},
		{"DELETE", "/connectors/%zz", ``},
		{"PATCH", "/connectors/sink-a/offsets", `{"offsets":[{"partition":{},"offset":null}]}`},
		{"POST", "/connectors/sink-a/tasks", `[{"a":"b"}]`},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t#") || method == "" || strings.ContainsAny(method, " \r\n\t/()<>@,;:\\\"[]?={}") {
			return
		}
		s, err := New(newMemHerder().seed(), Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(method, "http://worker"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, path, body, rec.Code, rec.Body.String())
		}
	})
}
