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
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// scrubResponses buffers each response and hides resolved placeholder
// values in its body before sending it, so no handler (error bodies,
// statuses, topics, config listings) can send one. JSON bodies are scrubbed
// value by value (every string, key or value, is rewritten on its own and
// the document re-encoded), so the answer stays valid JSON whatever a value
// contains. An answer about one connector (/connectors/{c}/...) hides only
// the values resolved for c (scrubFor): another connector's values never
// rewrite its config. In GET /connectors?expand=... each connector's entry
// is scrubbed for that connector. Anything else (plugins, errors not about a
// connector, /metrics text) hides every resolved value (scrub). Responses
// are small JSON documents; /metrics is buffered too.
func scrubResponses(scrub func(string) string, scrubFor func(connector, msg string) string, next http.Handler) http.Handler {
	if scrub == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &bufferedWriter{header: w.Header()}
		next.ServeHTTP(bw, r)
		body := bw.buf.Bytes()
		if bw.buf.Len() > 0 {
			if bw.status >= http.StatusBadRequest {
				// An error message is no connector's data: hide every value.
				body = scrubBody(body, scrubberFor("", scrub, nil))
			} else {
				body = scrubBody(body, scrubberFor(connectorPath(r, body), scrub, scrubFor))
			}
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

// bodyScrubber picks the scrub function for a string at a position of a
// JSON body: top is the top-level object key it sits under ("" for none).
// all is used for bodies that are not JSON.
type bodyScrubber struct {
	at  func(top string) func(string) string
	all func(string) string
}

// connectorPath is the path whose answer body is scrubbed: the request's,
// except that a connector created by POST /connectors is named in the
// answer, which is about that connector alone.
func connectorPath(r *http.Request, body []byte) string {
	if r.Method != http.MethodPost || strings.TrimSuffix(r.URL.Path, "/") != "/connectors" {
		return r.URL.Path
	}
	var created struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(body, &created) != nil || created.Name == "" {
		return ""
	}
	return "/connectors/" + url.PathEscape(created.Name)
}

// scrubberFor chooses how a response to path is scrubbed.
func scrubberFor(path string, scrub func(string) string, scrubFor func(connector, msg string) string) bodyScrubber {
	whole := func(string) func(string) string { return scrub }
	if scrubFor == nil {
		return bodyScrubber{at: whole, all: scrub}
	}
	rest, ok := strings.CutPrefix(path, "/connectors")
	switch {
	case !ok:
		return bodyScrubber{at: whole, all: scrub}
	case rest == "" || rest == "/":
		// The list: names, or {name: {...}} with ?expand.
		return bodyScrubber{at: func(top string) func(string) string {
			if top == "" {
				return func(s string) string { return s } // a connector name
			}
			return func(s string) string { return scrubFor(top, s) }
		}, all: scrub}
	case strings.HasPrefix(rest, "/"):
		name, _, _ := strings.Cut(rest[1:], "/")
		if n, err := url.PathUnescape(name); err == nil {
			name = n
		}
		one := func(s string) string { return scrubFor(name, s) }
		return bodyScrubber{at: func(string) func(string) string { return one }, all: one}
	default:
		return bodyScrubber{at: whole, all: scrub}
	}
}

// scrubBody scrubs a JSON body structurally, or any other body as text.
func scrubBody(body []byte, s bodyScrubber) []byte {
	if out, err := scrubJSON(body, s.at); err == nil {
		return out
	}
	return []byte(s.all(string(body)))
}

// scrubJSON re-encodes one JSON document with every string (keys and
// values) passed through at(top), where top is the top-level object key
// the string sits under ("" at the top level itself). Numbers keep their
// text; key order is kept. An error means body is not one JSON document.
func scrubJSON(body []byte, at func(top string) func(string) string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(body))
	// stack holds, per open container, whether it is an object and, for
	// objects, whether the next string is a key.
	type frame struct{ object, wantKey bool }
	var stack []frame
	top := ""
	first := true // no separator before the next element
	writeString := func(v string) error {
		b, err := encodeJSON(v)
		if err != nil {
			return err
		}
		out.Write(b)
		return nil
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(stack) == 0 && out.Len() > 0 {
			return nil, errors.New("more than one JSON value")
		}
		isKey := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			out.WriteByte(byte(d))
			stack = stack[:len(stack)-1]
			if len(stack) == 1 {
				top = "" // left a top-level member's value
			}
			first = false
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].wantKey = true
			}
			continue
		}
		if !first {
			if isKey || len(stack) > 0 && !stack[len(stack)-1].object {
				out.WriteByte(',')
			}
		}
		if isKey {
			k := tok.(string)
			if len(stack) == 1 {
				top = k
				if err := writeString(k); err != nil {
					return nil, err
				}
			} else if err := writeString(at(top)(k)); err != nil {
				return nil, err
			}
			out.WriteByte(':')
			stack[len(stack)-1].wantKey = false
			first = true
			continue
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(v))
			stack = append(stack, frame{object: v == '{', wantKey: v == '{'})
			first = true
			continue
		case string:
			if len(stack) == 0 {
				err = writeString(at("")(v))
			} else {
				err = writeString(at(top)(v))
			}
		case json.Number:
			out.WriteString(v.String())
		case bool:
			out.WriteString(strconv.FormatBool(v))
		case nil:
			out.WriteString("null")
		}
		if err != nil {
			return nil, err
		}
		first = false
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
		if len(stack) == 1 && stack[0].object {
			top = ""
		}
	}
	if out.Len() == 0 {
		return nil, errors.New("empty body")
	}
	return out.Bytes(), nil
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
