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

package plugin

import (
	"fmt"
	"strings"
)

// KeyConsumerGroupType chooses how a sink connector's tasks consume: through
// a classic consumer group "connect-<name>" (one task per partition at
// most, records in partition order) or through a share group (KIP-932)
// "connect-share-<name>" (any number of tasks read the same partitions,
// each record acknowledged on its own). The name is Kafka's own word for
// the kind of a group (ListGroups' group types: classic, consumer, share);
// it is a connector setting, not a consumer.override.*, because it changes
// what the runtime does with the records, not only a client property.
const KeyConsumerGroupType = "consumer.group.type"

// Values of consumer.group.type.
const (
	GroupTypeConsumer = "consumer"
	GroupTypeShare    = "share"
)

// ShareGroupMode is the reason of a share-mode sink's task limit: no
// partition count bounds its tasks, tasks.max does.
const ShareGroupMode Reason = "ShareGroup"

// ShareGroupTolerant is implemented by a sink Connector whose tasks keep
// their guarantees when records arrive out of partition order and some of
// them more than once, as a share group delivers them: records of one
// partition are spread over every task, a record released by a task that
// failed or stopped comes again (possibly to another task, after later
// ones), and the runtime may Put further records after a failed Put.
// ToleratesShareGroup answers for one configuration; when it cannot, why
// says what to change. A connector without it is refused share mode.
type ToleratesShareGroup interface {
	ToleratesShareGroup(config map[string]string) (ok bool, why string)
}

// ShareMode reports whether a sink configuration consumes through a share
// group.
func ShareMode(config map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(config[KeyConsumerGroupType]), GroupTypeShare)
}

// ValidateShareMode refuses consumer.group.type=share for a connector that
// does not declare that it tolerates out-of-order and repeated records with
// this configuration. The error names the key.
func ValidateShareMode(conn Connector, config map[string]string) []FieldError {
	if !ShareMode(config) {
		return nil
	}
	t, ok := conn.(ToleratesShareGroup)
	if !ok {
		return []FieldError{{Name: KeyConsumerGroupType, Message: fmt.Sprintf(
			"%s=%s: this sink does not declare that it tolerates records out of order and delivered again, as a share group delivers them; use %s=%s",
			KeyConsumerGroupType, GroupTypeShare, KeyConsumerGroupType, GroupTypeConsumer)}}
	}
	if ok, why := t.ToleratesShareGroup(config); !ok {
		return []FieldError{{Name: KeyConsumerGroupType, Message: fmt.Sprintf("%s=%s: %s", KeyConsumerGroupType, GroupTypeShare, why)}}
	}
	return nil
}

func consumerGroupTypeField() ConfigField {
	return ConfigField{Name: KeyConsumerGroupType, Type: TypeString, Default: GroupTypeConsumer, Group: GroupCommon, Importance: ImportanceMedium, Width: WidthShort,
		DisplayName: "Consumer group type", Validator: OneOf(GroupTypeConsumer, GroupTypeShare), Recommended: []string{GroupTypeConsumer, GroupTypeShare},
		Doc: "consumer: the tasks share the partitions through the consumer group connect-<name> (at most one task per partition, records in partition order). " +
			"share: the tasks read through the share group connect-share-<name> (KIP-932): tasks.max alone limits the tasks, records come out of order and may come again; only sinks that tolerate that accept it."}
}
