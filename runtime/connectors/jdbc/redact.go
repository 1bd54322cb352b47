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

package jdbc

import (
	"net/url"
	"strings"
)

// Redact replaces every secret in s (also in its URL-escaped forms) with
// xxxxx.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 1 {
			s = strings.ReplaceAll(s, sec, "xxxxx")
			if esc := url.QueryEscape(sec); esc != sec {
				s = strings.ReplaceAll(s, esc, "xxxxx")
			}
			if esc := url.PathEscape(sec); esc != sec {
				s = strings.ReplaceAll(s, esc, "xxxxx")
			}
		}
	}
	return s
}

// redactedError hides secrets in an error's text.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string { return Redact(e.err.Error(), e.secrets...) }

// Unwrap exposes the cause for errors.Is/As; print only Error().
func (e *redactedError) Unwrap() error { return e.err }

// RedactError wraps err so that its text never shows the secrets.
func RedactError(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err, secrets: secrets}
}
