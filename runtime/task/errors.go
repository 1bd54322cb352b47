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

package task

// Error handling of record stages, after Kafka Connect's KIP-298
// (errors.retry.timeout, errors.retry.delay.max.ms, errors.tolerance,
// errors.log.*, and for sinks errors.deadletterqueue.*).
//
// This file holds the stages, their errors and the errors.* settings; the
// handler is in handler.go, the dead letter queue in dlq.go. The runners
// call into the handler only after a record stage failed, so the success
// path costs nothing: no allocation, no lock, no extra branch beyond the
// error check the runners had anyway. A failure goes through
// errorHandler.handle, which
//  1. retries the stage while the error wraps plugin.ErrRetriable and
//     errors.retry.timeout allows it (exponential backoff from 300 ms,
//     capped by errors.retry.delay.max.ms and by the deadline);
//  2. counts and, with errors.log.enable, logs the failure;
//  3. with errors.tolerance=none fails the task; with all skips the record
//     and, for a sink with a dead letter queue, writes the original Kafka
//     record there. The sink commits a skipped record's offset only after
//     the dead letter queue acknowledged it (see SinkRunner's commit).
//
// Stages covered: key, value and header conversion in both runners, and
// the transforms (StageTransformation, see transforms.go).

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Stage names a step of a runner's record pipeline. The values are Kafka
// Connect's, so the __connect.errors.stage header and the logs read the same.
type Stage string

// Record stages errors are handled in.
const (
	StageKeyConverter    Stage = "KEY_CONVERTER"
	StageValueConverter  Stage = "VALUE_CONVERTER"
	StageHeaderConverter Stage = "HEADER_CONVERTER"
	StageTransformation  Stage = "TRANSFORMATION"
	// StageTaskPut is a sink task's write of a record, reported through
	// its errant record reporter.
	StageTaskPut Stage = "TASK_PUT"
)

// StageError is the failure of one record in one stage. Only StageErrors
// are retried and tolerated; any other record error fails the task.
type StageError struct {
	Stage Stage
	// Class names what failed: the Go type of the converter or transform.
	Class string
	Err   error
}

func (e *StageError) Error() string { return e.Err.Error() }

func (e *StageError) Unwrap() error { return e.Err }

// stageErr wraps err as a failure of stage in the component c.
func stageErr(stage Stage, c any, err error) error {
	return &StageError{Stage: stage, Class: fmt.Sprintf("%T", c), Err: err}
}

// ErrorConfig is a connector's error handling. The zero value is Kafka's
// default behaviour: no retries, errors.tolerance=none, nothing logged, no
// dead letter queue.
type ErrorConfig struct {
	// RetryTimeout is errors.retry.timeout: how long a retriable failure is
	// retried; 0 never, negative forever.
	RetryTimeout time.Duration
	// RetryMaxDelay is errors.retry.delay.max.ms. Default 60s.
	RetryMaxDelay time.Duration
	// RetryMinDelay is the first backoff, doubled per retry. Default 300ms
	// (Kafka's); tests shorten it.
	RetryMinDelay time.Duration
	// ToleranceAll is errors.tolerance=all: skip failed records.
	ToleranceAll bool
	// Log is errors.log.enable; LogMessages errors.log.include.messages
	// (keys, values and headers in the log: off by default, they may hold
	// secrets).
	Log, LogMessages bool
	// DLQTopic is errors.deadletterqueue.topic.name (sinks only); empty for
	// none. DLQReplication is its replication factor when the runner
	// creates it (-1 the broker's default). DLQContextHeaders adds the
	// __connect.errors.* headers.
	DLQTopic          string
	DLQReplication    int16
	DLQContextHeaders bool
}

// ParseErrorConfig reads the errors.* keys of a connector configuration;
// the dead letter queue keys only for sinks. A bad value is an error naming
// the key.
func ParseErrorConfig(kind plugin.Kind, config map[string]string) (ErrorConfig, error) {
	var ec ErrorConfig
	num := func(key string, def, lo int64) (int64, error) {
		v := strings.TrimSpace(config[key])
		if v == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo {
			return 0, fmt.Errorf("%s=%q: want a whole number, at least %d", key, v, lo)
		}
		return n, nil
	}
	flag := func(key string) (bool, error) {
		v := strings.TrimSpace(config[key])
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%s=%q: want true or false", key, v)
		}
		return b, nil
	}
	var err error
	var n int64
	if n, err = num(plugin.KeyErrorsRetryTimeout, 0, -1); err != nil {
		return ec, err
	}
	ec.RetryTimeout = time.Duration(n) * time.Millisecond
	if n, err = num(plugin.KeyErrorsRetryMaxDelay, 60000, 1); err != nil {
		return ec, err
	}
	ec.RetryMaxDelay = time.Duration(n) * time.Millisecond
	switch t := strings.ToLower(strings.TrimSpace(config[plugin.KeyErrorsTolerance])); t {
	case "", "none":
	case "all":
		ec.ToleranceAll = true
	default:
		return ec, fmt.Errorf("%s=%q: want none or all", plugin.KeyErrorsTolerance, config[plugin.KeyErrorsTolerance])
	}
	if ec.Log, err = flag(plugin.KeyErrorsLogEnable); err != nil {
		return ec, err
	}
	if ec.LogMessages, err = flag(plugin.KeyErrorsLogIncludeMessage); err != nil {
		return ec, err
	}
	if kind != plugin.KindSink {
		return ec, nil
	}
	ec.DLQTopic = strings.TrimSpace(config[plugin.KeyDLQTopicName])
	if n, err = num(plugin.KeyDLQReplication, 3, -1); err != nil || n == 0 || n > 32767 {
		return ec, fmt.Errorf("%s=%q: want -1 (the broker's default) or a positive number", plugin.KeyDLQReplication, config[plugin.KeyDLQReplication])
	}
	ec.DLQReplication = int16(n)
	if ec.DLQContextHeaders, err = flag(plugin.KeyDLQHeaders); err != nil {
		return ec, err
	}
	return ec, nil
}

// checkDLQTopic refuses a dead letter queue topic that the sink consumes:
// every record that failed there would be read and fail again.
func (ec ErrorConfig) checkDLQTopic(topics []string, topicsRegex string) error {
	if ec.DLQTopic == "" {
		return nil
	}
	if slices.Contains(topics, ec.DLQTopic) {
		return fmt.Errorf("%s=%q is one of the consumed topics; choose another topic", plugin.KeyDLQTopicName, ec.DLQTopic)
	}
	if topicsRegex != "" {
		if re, err := regexp.Compile("^(?:" + topicsRegex + ")$"); err == nil && re.MatchString(ec.DLQTopic) {
			return fmt.Errorf("%s=%q matches %s; choose another topic", plugin.KeyDLQTopicName, ec.DLQTopic, plugin.KeyTopicsRegex)
		}
	}
	return nil
}

func (ec *ErrorConfig) setDefaults() {
	if ec.RetryMaxDelay <= 0 {
		ec.RetryMaxDelay = time.Minute
	}
	if ec.RetryMinDelay <= 0 {
		ec.RetryMinDelay = 300 * time.Millisecond
	}
	if ec.DLQReplication == 0 {
		ec.DLQReplication = 3
	}
}

// errSkipped is what handle returns for a record skipped under
// errors.tolerance=all; callers test it with ==.
var errSkipped = errors.New("record skipped (errors.tolerance=all)")
