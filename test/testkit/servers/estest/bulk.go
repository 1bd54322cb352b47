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

package estest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// action is one parsed _bulk action.
type action struct {
	kind, index, id string
	version         int64
	external        bool
	doc             json.RawMessage
	err             []byte // a per-item error body, when the action is invalid
	status          int
}

func (s *Standin) bulk(w http.ResponseWriter, r *http.Request, target string) {
	start := time.Now()
	acts, err := parseBulk(r, target)
	s.mu.Lock()
	s.requests++
	if len(s.failNext) > 0 {
		status := s.failNext[0]
		s.failNext = s.failNext[1:]
		s.mu.Unlock()
		if status == http.StatusTooManyRequests {
			writeJSON(w, status, errorJSON(status, "es_rejected_execution_exception", "rejected execution of coordinating operation [shard_detail=[], coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=1, max_coordinating_and_primary_bytes=0]"))
		} else {
			writeJSON(w, status, errorJSON(status, "cluster_block_exception", "blocked by: [SERVICE_UNAVAILABLE/2/no master];"))
		}
		return
	}
	if err != nil {
		s.mu.Unlock()
		writeJSON(w, 400, errorJSON(400, "illegal_argument_exception", err.Error()))
		return
	}
	var items bytes.Buffer
	failed := false
	for i := range acts {
		a := &acts[i]
		if i > 0 {
			items.WriteByte(',')
		}
		var res []byte
		if s.rejectN > 0 {
			s.rejectN--
			a.status = http.StatusTooManyRequests
			a.err = itemError("es_rejected_execution_exception", "rejected execution of primary operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, primary_operation_bytes=1, max_coordinating_and_primary_bytes=0]", "")
		} else if a.err == nil {
			res = s.apply(a)
		}
		s.statuses[a.status]++
		failed = failed || a.err != nil
		fmt.Fprintf(&items, `{%q:{"_index":%q,"_id":%q,"status":%d`, a.kind, a.index, a.id, a.status)
		if a.err != nil {
			items.WriteString(`,"error":`)
			items.Write(a.err)
		} else {
			items.Write(res)
		}
		items.WriteString("}}")
	}
	var withheld chan struct{}
	if s.withhold {
		if s.answerLeft > 0 {
			s.answerLeft -= len(acts)
		} else {
			withheld = s.release
		}
	}
	s.mu.Unlock()
	if withheld != nil {
		// Applied, not answered: the client's writes are in the index
		// without an acknowledgment until ReleaseAnswers (or the client
		// goes away).
		select {
		case <-withheld:
		case <-r.Context().Done():
			return
		}
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, `{"took":%d,"errors":%t,"items":[`, time.Since(start).Milliseconds(), failed)
	out.Write(items.Bytes())
	out.WriteString("]}")
	writeJSON(w, 200, out.Bytes())
}

func itemError(typ, reason, index string) []byte {
	m := map[string]any{"type": typ, "reason": reason}
	if index != "" {
		m["index"] = index
	}
	b, _ := json.Marshal(m)
	return b
}

// parseBulk reads the NDJSON body: an action line, then (except for
// delete) a source line.
func parseBulk(r *http.Request, target string) ([]action, error) {
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 100<<20)
	var out []action
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var head map[string]struct {
			Index       string `json:"_index"`
			ID          any    `json:"_id"`
			Version     *int64 `json:"version"`
			VersionType string `json:"version_type"`
		}
		if err := json.Unmarshal(b, &head); err != nil || len(head) != 1 {
			return nil, fmt.Errorf("Malformed action/metadata line [%d], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]", line)
		}
		var a action
		for k, v := range head {
			a.kind, a.index = k, v.Index
			if a.index == "" {
				a.index = target
			}
			switch id := v.ID.(type) {
			case string:
				a.id = id
			case nil:
			default:
				return nil, fmt.Errorf("Malformed action/metadata line [%d], _id must be a string", line)
			}
			if v.Version != nil {
				a.version = *v.Version
			}
			a.external = v.VersionType == "external" || v.VersionType == "external_gt"
		}
		switch a.kind {
		case "index", "create", "update":
			if !sc.Scan() {
				return nil, fmt.Errorf("Validation Failed: 1: no requests added; the action on line [%d] has no source", line)
			}
			line++
			a.doc = append(json.RawMessage(nil), bytes.TrimSpace(sc.Bytes())...)
		case "delete":
		default:
			return nil, fmt.Errorf("Malformed action/metadata line [%d], expected field [create], [delete], [index] or [update] but found [%s]", line, a.kind)
		}
		switch {
		case a.index == "":
			a.status, a.err = 400, itemError("action_request_validation_exception", "Validation Failed: 1: index is missing;", "")
		case a.kind == "update":
			a.status, a.err = 400, itemError("illegal_argument_exception", "the stand-in does not implement update actions", a.index)
		case a.kind == "delete" && a.id == "":
			a.status, a.err = 400, itemError("action_request_validation_exception", "Validation Failed: 1: id is missing;", "")
		case a.external && a.id == "":
			a.status, a.err = 400, itemError("action_request_validation_exception", "Validation Failed: 1: an id must be provided if version type or value are set;", "")
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// apply performs one valid action with mu held; it sets a.status (and
// a.err) and returns the rest of a successful item.
func (s *Standin) apply(a *action) []byte {
	ix := s.indices[a.index]
	if ix == nil {
		ix = &index{docs: map[string]json.RawMessage{}, versions: map[string]int64{}, mapping: map[string]string{}}
		s.indices[a.index] = ix
	}
	if a.id == "" {
		a.id = "auto-" + strconv.Itoa(len(ix.versions)+1)
	}
	cur, seen := ix.versions[a.id]
	_, exists := ix.docs[a.id]
	conflict := func() []byte {
		a.status = http.StatusConflict
		if a.external {
			a.err = itemError("version_conflict_engine_exception", fmt.Sprintf("[%s]: version conflict, current version [%d] is higher or equal to the one provided [%d]", a.id, cur, a.version), a.index)
		} else {
			a.err = itemError("version_conflict_engine_exception", fmt.Sprintf("[%s]: version conflict, document already exists (current version [%d])", a.id, cur), a.index)
		}
		return nil
	}
	next := cur + 1
	if a.external {
		if seen && a.version <= cur {
			return conflict()
		}
		next = a.version
	}
	if a.kind == "delete" {
		ix.versions[a.id] = next
		if !exists {
			a.status = http.StatusNotFound
			return result("not_found", next)
		}
		delete(ix.docs, a.id)
		a.status = http.StatusOK
		return result("deleted", next)
	}
	if a.kind == "create" && exists {
		return conflict()
	}
	if reason := ix.check(a.doc, a.id); reason != "" {
		a.status = http.StatusBadRequest
		a.err = itemError("document_parsing_exception", reason, a.index)
		return nil
	}
	ix.docs[a.id] = a.doc
	ix.versions[a.id] = next
	if exists {
		a.status = http.StatusOK
		return result("updated", next)
	}
	a.status = http.StatusCreated
	return result("created", next)
}

func result(res string, version int64) []byte {
	return []byte(fmt.Sprintf(`,"_version":%d,"result":%q,"_shards":{"total":1,"successful":1,"failed":0},"_seq_no":%d,"_primary_term":1`, version, res, version))
}

// check maps the document's top-level fields dynamically and returns why
// it cannot be indexed, or "".
func (ix *index) check(doc json.RawMessage, id string) string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil {
		return fmt.Sprintf("[1:1] failed to parse: the source of document with id '%s' is not a JSON object", id)
	}
	kinds := map[string]string{}
	for name, raw := range fields {
		k := kindOf(raw)
		if k == "" {
			continue // null and arrays: no mapping decided here
		}
		want, ok := ix.mapping[name]
		if !ok {
			kinds[name] = k
			continue
		}
		if !fits(want, k, raw) {
			if want == "object" {
				return fmt.Sprintf("object mapping for [%s] tried to parse field [%s] as object, but found a concrete value", name, name)
			}
			return fmt.Sprintf("[1:2] failed to parse field [%s] of type [%s] in document with id '%s'. Preview of field's value: '%s'", name, want, id, preview(raw))
		}
	}
	for name, k := range kinds {
		ix.mapping[name] = k
	}
	return ""
}

func kindOf(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "text"
	case '{':
		return "object"
	case 't', 'f':
		return "boolean"
	case 'n', '[':
		return ""
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "float"
	}
	return "long"
}

// fits reports whether a value of kind got can go into a field mapped as
// want, with Elasticsearch's coercions (numbers from numeric strings, text
// from any scalar).
func fits(want, got string, raw json.RawMessage) bool {
	switch want {
	case got:
		return true
	case "text":
		return got != "object"
	case "long", "float":
		if got == "long" || got == "float" {
			return true
		}
		if got == "text" {
			var s string
			_ = json.Unmarshal(raw, &s)
			_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			return err == nil
		}
	case "boolean":
		if got == "text" {
			var s string
			_ = json.Unmarshal(raw, &s)
			return s == "true" || s == "false" || s == ""
		}
	}
	return false
}

func preview(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	if len(s) > 20 {
		s = s[:20]
	}
	return s
}
