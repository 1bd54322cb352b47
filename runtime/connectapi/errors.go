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

package connectapi

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinel errors for flow. A herder returns them wrapped (fmt.Errorf with
// %w, or an *Error built by the constructors below) and the REST layer maps
// them to status codes with StatusCode.
var (
	// ErrNotFound: the connector, task or plugin does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a connector of that name exists (409).
	ErrAlreadyExists = errors.New("already exists")
	// ErrRebalanceInProgress: the group is rebalancing or this worker's
	// config view is stale; the client should retry (409).
	ErrRebalanceInProgress = errors.New("rebalance in progress")
	// ErrBadRequest: the request is invalid (400).
	ErrBadRequest = errors.New("bad request")
	// ErrConflict: the request conflicts with the connector's state (409).
	ErrConflict = errors.New("conflict")
	// ErrNotLeader: only the leader can do this; see NotLeaderError.
	ErrNotLeader = errors.New("not the leader")
)

// Error is an error with the HTTP status the REST layer answers with and a
// message safe to show to the client (it never holds config values).
type Error struct {
	Code    int
	Message string
	// Kind is one of the sentinels above (or nil), so errors.Is works.
	Kind error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel, so errors.Is(err, ErrNotFound) holds.
func (e *Error) Unwrap() error { return e.Kind }

func newError(code int, kind error, format string, args []any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Kind: kind}
}

// NotFoundf builds a 404 error, e.g. NotFoundf("Connector %s not found", name).
func NotFoundf(format string, args ...any) *Error {
	return newError(http.StatusNotFound, ErrNotFound, format, args)
}

// AlreadyExistsf builds a 409 error, e.g. AlreadyExistsf("Connector %s already exists", name).
func AlreadyExistsf(format string, args ...any) *Error {
	return newError(http.StatusConflict, ErrAlreadyExists, format, args)
}

// RebalanceInProgressf builds a 409 error for a request that cannot complete
// while the group rebalances.
func RebalanceInProgressf(format string, args ...any) *Error {
	return newError(http.StatusConflict, ErrRebalanceInProgress, format, args)
}

// BadRequestf builds a 400 error.
func BadRequestf(format string, args ...any) *Error {
	return newError(http.StatusBadRequest, ErrBadRequest, format, args)
}

// Conflictf builds a 409 error for a request that conflicts with the
// connector's current state.
func Conflictf(format string, args ...any) *Error {
	return newError(http.StatusConflict, ErrConflict, format, args)
}

// MessageRebalance is Kafka's message for a request refused during a rebalance.
const MessageRebalance = "Cannot complete request momentarily due to stale configuration (typically caused by a concurrent config change)"

// MessageNoLeader is Kafka's message when a write reaches a follower that
// does not know the leader yet.
const MessageNoLeader = "Cannot complete request momentarily due to no known leader URL, likely because a rebalance was underway."

// MessageForwardLoop is Kafka's message when a forwarded request reached a
// worker that is not the leader either.
const MessageForwardLoop = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"

// OffsetsNotStoppedMessage is Kafka's answer (400) to an offsets change on a
// connector that is not STOPPED.
func OffsetsNotStoppedMessage(connector string) string {
	return "Connectors must be in the STOPPED state before their offsets can be modified. " +
		"This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/" +
		connector + "/stop' endpoint"
}

// NotLeaderError says that a write must go to the leader. LeaderURL is the
// leader's advertised REST URL (e.g. "http://10.0.0.7:8083"), empty when no
// leader is known (the REST layer then answers 409).
type NotLeaderError struct {
	LeaderURL string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderURL == "" {
		return "this worker is not the leader and no leader is known"
	}
	return "this worker is not the leader; the leader is " + e.LeaderURL
}

// Unwrap returns ErrNotLeader.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// StatusCode maps an error to the HTTP status the REST layer answers with:
// an *Error's Code, else the code of a wrapped sentinel, else 500.
// A NotLeaderError maps to 409 (used only when forwarding is impossible).
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) && e.Code != 0 {
		return e.Code
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrAlreadyExists), errors.Is(err, ErrRebalanceInProgress),
		errors.Is(err, ErrConflict), errors.Is(err, ErrNotLeader):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}
