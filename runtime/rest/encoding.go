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
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// writeJSON writes v as compact JSON like Kafka's Jackson does: no HTML
// escaping, no trailing newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		// Only a bug (an unencodable value) gets here.
		writeError(w, http.StatusInternalServerError, "Internal server error: encoding the response failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeError writes Kafka's error shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := encodeJSON(connectapi.ErrorMessage{ErrorCode: status, Message: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// errBadBody is a 400 about the request body. Its messages name keys and
// positions, never values: bodies hold connector configs and credentials.
func errBadBody(format string, args ...any) error {
	return connectapi.BadRequestf(format, args...)
}

// readBody reads the whole body, bounded by limit (413 beyond).
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, &connectapi.Error{Code: http.StatusBadRequest, Kind: connectapi.ErrBadRequest,
			Message: "Reading the request body failed"}
	}
	if int64(len(b)) > limit {
		return nil, &connectapi.Error{Code: http.StatusRequestEntityTooLarge, Kind: connectapi.ErrBadRequest,
			Message: fmt.Sprintf("Request body is larger than %d bytes", limit)}
	}
	return b, nil
}

// decodeStrict decodes one JSON value from body into v, refusing unknown
// fields and trailing data. what names the expected body in messages.
func decodeStrict(body []byte, v any, what string) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errBadBody("Request body is empty: send %s as JSON", what)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeDecodeError(err, what)
	}
	if dec.More() {
		return errBadBody("Request body holds more than one JSON value: send %s only", what)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errBadBody("Request body holds data after the JSON value: send %s only", what)
	}
	return nil
}

// describeDecodeError turns a decoding error into a 400 whose message
// names the field and the fix but no value from the body.
func describeDecodeError(err error, what string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errBadBody("Malformed JSON in request body at byte %d: send %s", syn.Offset, what)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errBadBody("Malformed JSON in request body: it ends early; send %s", what)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return errBadBody("Request body is a JSON %s: send %s", typ.Value, what)
		}
		return errBadBody("Field %q in request body is a JSON %s, want %s: send %s", shorten(field), typ.Value, typ.Type.String(), what)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return errBadBody("Unknown field %s in request body: send %s", shorten(name), what)
	}
	return errBadBody("Malformed JSON in request body: send %s", what)
}

// shorten bounds a field name taken from a body before it goes in a message.
func shorten(s string) string {
	const max = 100
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// decodeConfig decodes a connector config object: string values, with
// numbers and booleans taken as their JSON text as Kafka does; null,
// objects and arrays are refused naming the key.
func decodeConfig(body []byte, what string) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := decodeStrict(body, &raw, what); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errBadBody("Request body is null: send %s", what)
	}
	return configValues(raw, what)
}

// configValues converts a decoded config object to strings; null values
// are refused, naming the key.
func configValues(raw map[string]json.RawMessage, what string) (map[string]string, error) {
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		s, isNull, err := scalarText(v)
		if err != nil {
			return nil, errBadBody("Config key %q must have a string value: send %s", shorten(k), what)
		}
		if isNull {
			return nil, errBadBody("Config key %q is null: give it a string value or leave it out", shorten(k))
		}
		out[k] = s
	}
	return out, nil
}

// scalarText returns the text of a JSON string, number or boolean.
func scalarText(v json.RawMessage) (text string, isNull bool, err error) {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0:
		return "", false, errors.New("empty value")
	case string(v) == "null":
		return "", true, nil
	case v[0] == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, err
		}
		return s, false, nil
	case string(v) == "true" || string(v) == "false":
		return string(v), false, nil
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		return string(v), false, nil
	}
	return "", false, errors.New("not a scalar")
}

// decodePatch decodes a PATCH config body: null removes a key.
func decodePatch(body []byte) (connectapi.ConfigPatch, error) {
	const what = "a JSON object of config keys to set (string values) or remove (null)"
	var raw map[string]json.RawMessage
	if err := decodeStrict(body, &raw, what); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errBadBody("Request body is null: send %s", what)
	}
	patch := make(connectapi.ConfigPatch, len(raw))
	for k, v := range raw {
		s, isNull, err := scalarText(v)
		if err != nil {
			return nil, errBadBody("Config key %q must have a string value or null: send %s", shorten(k), what)
		}
		if isNull {
			patch[k] = nil
			continue
		}
		patch[k] = &s
	}
	return patch, nil
}
