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

package connectnames

import "strings"

// Share mode (KIP-932) of sink connectors, as the share-group sink names it:
// config consumer.group.type=share, group "connect-share-<connector>". This
// is the one place the autoscaling side forms them; it gives way to the
// share-group sink's own definitions when both are on one branch.
const (
	// KeyConsumerGroupType is the sink config key choosing the group type.
	KeyConsumerGroupType = "consumer.group.type"
	// GroupTypeShare is its value for a share group.
	GroupTypeShare = "share"
	// ShareGroupPrefix starts a share-mode sink's group id.
	ShareGroupPrefix = "connect-share-"
)

// ShareMode reports whether a sink's config consumes through a share group.
func ShareMode(config map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(config[KeyConsumerGroupType]), GroupTypeShare)
}

// ShareGroup is a share-mode sink's share group id.
func ShareGroup(connector string) string { return ShareGroupPrefix + connector }
