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
	"bytes"
	"net/http"
	"strconv"
)

// scrubResponses buffers each response and passes its body through scrub
// before sending it, so no handler (error bodies, statuses, topics, config
// listings) can send a value scrub hides. Responses are small JSON
// documents; /metrics is buffered too.
func scrubResponses(scrub func(string) string, next http.Handler) http.Handler {
	if scrub == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &bufferedWriter{header: w.Header()}
		next.ServeHTTP(bw, r)
		body := bw.buf.Bytes()
		if bw.buf.Len() > 0 {
			body = []byte(scrub(bw.buf.String()))
		}
		if bw.status == 0 {
			bw.status = http.StatusOK
		}
		if w.Header().Get("Content-Length") != "" {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(bw.status)
		_, _ = w.Write(body)
	})
}

type bufferedWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }
func (b *bufferedWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.buf.Write(p)
}
