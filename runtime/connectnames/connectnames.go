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

// Package connectnames holds the names Kafka Connect derives from a
// connector's name, so that the worker, the operator and the API types use
// one definition of each. It imports only the standard library, so api/v1alpha1 may use it
// without pulling the runtime in.
package connectnames

import (
	"strconv"
	"strings"
)

// SinkGroupPrefix precedes the connector name in a sink connector's
// consumer group.
const SinkGroupPrefix = "connect-"

// SinkGroup is the consumer group of a sink connector's tasks,
// "connect-<connector>" as in Kafka Connect.
func SinkGroup(connector string) string { return SinkGroupPrefix + connector }

// ShareGroupPrefix precedes the connector name in the share group (KIP-932)
// of a sink connector with consumer.group.type=share.
const ShareGroupPrefix = "connect-share-"

// ShareGroup is the share group of a sink connector's tasks in share mode,
// "connect-share-<connector>". It differs from SinkGroup because Kafka keeps
// one group type per group id: a classic or consumer group
// "connect-<connector>" with committed offsets would block a share group of
// the same id, so switching a connector's mode would fail until the old
// group is deleted.
func ShareGroup(connector string) string { return ShareGroupPrefix + connector }

// TransactionalID is the transactional.id of an exactly-once source task's
// producer, "<group.id>-<connector>-<task>" as Kafka Connect derives it
// (KIP-618), so that every instance of one task, on any worker, fences the
// one before it.
func TransactionalID(groupID, connector string, task int) string {
	return groupID + "-" + connector + "-" + strconv.Itoa(task)
}

// SinkInstanceID is the group.instance.id of a sink task's consumer on a
// static worker, "<worker instance id>-<connector>-<task>": unique per
// task and worker, and the same when the worker restarts.
func SinkInstanceID(workerInstance, connector string, task int) string {
	return workerInstance + "-" + connector + "-" + strconv.Itoa(task)
}

// SinkInstanceWorker returns the worker instance id in a SinkInstanceID of
// the connector's sink group, or "" when id is not one.
func SinkInstanceWorker(connector, id string) string {
	rest := strings.TrimRight(id, "0123456789")
	if len(rest) == len(id) {
		return ""
	}
	w, ok := strings.CutSuffix(rest, "-"+connector+"-")
	if !ok {
		return ""
	}
	return w
}
