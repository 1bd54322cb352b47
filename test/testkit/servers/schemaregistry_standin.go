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

package servers

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// The layers below stand in for parts of Confluent's registry that the
// conduit-schema-registry server lacks. Tests relying on one carry
// Standin in their names.

// latestVersion resolves the version "latest" (GET
// /subjects/{s}/versions/latest and .../latest/schema), which the server
// reads as a version numbered -1 and never finds, to the subject's
// highest version.
func latestVersion(backend string, next http.Handler) http.Handler {
	cl, _ := sr.NewClient(sr.URLs(backend))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/subjects/")
		if i := strings.Index(rest, "/versions/latest"); ok && i > 0 {
			subject := rest[:i]
			if v, err := highestVersion(r.Context(), cl, subject); err == nil {
				r.URL.Path = "/subjects/" + subject + "/versions/" + strconv.Itoa(v) + rest[i+len("/versions/latest"):]
				r.URL.RawPath = ""
			}
		}
		next.ServeHTTP(w, r)
	})
}

func highestVersion(ctx context.Context, cl *sr.Client, subject string) (int, error) {
	vs, err := cl.SubjectVersions(ctx, subject)
	if err != nil {
		return 0, err
	}
	if len(vs) == 0 {
		return 0, fmt.Errorf("subject %q has no versions", subject)
	}
	top := vs[0]
	for _, v := range vs {
		top = max(top, v)
	}
	return top, nil
}

// basicAuth answers 401 as Confluent's registry does without the right
// credentials.
func basicAuth(user, password string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="SchemaRegistry"`)
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(sr.ResponseError{ErrorCode: 401, Message: "Unauthorized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// compatibility checks an Avro schema being registered against the
// subject's latest version (with hamba/avro's compatibility check) and
// refuses it with Confluent's status and message; it also answers
// GET /config.
func compatibility(level, backend string, next http.Handler) (http.Handler, error) {
	switch level {
	case "BACKWARD", "FORWARD", "FULL", "NONE":
	default:
		return nil, fmt.Errorf("servers: schema registry compatibility %q: use BACKWARD, FORWARD, FULL or NONE", level)
	}
	cl, err := sr.NewClient(sr.URLs(backend))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex // a check and its registration are one step
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && (r.URL.Path == "/config" || strings.HasPrefix(r.URL.Path, "/config/")) {
			_ = json.NewEncoder(w).Encode(map[string]string{"compatibilityLevel": level})
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/subjects/")
		subject, isRegister := strings.CutSuffix(rest, "/versions")
		if !ok || !isRegister || r.Method != http.MethodPost || level == "NONE" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock()
		defer mu.Unlock()
		var in sr.Schema
		if json.Unmarshal(body, &in) != nil || in.Type != sr.TypeAvro {
			next.ServeHTTP(w, r)
			return
		}
		v, err := highestVersion(r.Context(), cl, subject)
		if err != nil { // the subject's first version
			next.ServeHTTP(w, r)
			return
		}
		latest, err := cl.SchemaByVersion(r.Context(), subject, v)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		if msg := avroIncompatible(level, in.Schema, latest.Schema.Schema); msg != "" {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(sr.ResponseError{ErrorCode: http.StatusConflict,
				Message: fmt.Sprintf("Schema being registered is incompatible with an earlier schema for subject %q, details: [%s]", subject, msg)})
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}

func avroIncompatible(level, newText, oldText string) string {
	newS, err := avro.ParseWithCache(newText, "", &avro.SchemaCache{})
	if err != nil {
		return "new schema: " + err.Error()
	}
	oldS, err := avro.ParseWithCache(oldText, "", &avro.SchemaCache{})
	if err != nil {
		return "old schema: " + err.Error()
	}
	c := avro.NewSchemaCompatibility()
	if level == "BACKWARD" || level == "FULL" { // new readers read old data
		if err := c.Compatible(newS, oldS); err != nil {
			return "{compatibility:'BACKWARD', description:'" + err.Error() + "'}"
		}
	}
	if level == "FORWARD" || level == "FULL" { // old readers read new data
		if err := c.Compatible(oldS, newS); err != nil {
			return "{compatibility:'FORWARD', description:'" + err.Error() + "'}"
		}
	}
	return ""
}
