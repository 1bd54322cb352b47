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

package loglevel

import (
	"fmt"
	"strings"
)

// The worker's named loggers: the value of a logger's "logger" or
// "component" attribute (Handler's WithAttrs).
const (
	// REST is the REST server.
	REST = "rest"
	// Kafka is the franz-go clients of connectors and tasks.
	Kafka = "kgo"
	// Connector covers every connector and its tasks; "connector.<name>"
	// one connector and its tasks.
	Connector = "connector"
)

// kafkaNames maps Kafka Connect's logger names onto the worker's: a level
// set on the Kafka name, or on a name under it, is set on the worker's.
var kafkaNames = []struct{ kafka, own string }{
	{"org.apache.kafka.connect.runtime.rest", REST},
	{"org.apache.kafka.clients", Kafka},
}

// Name returns the worker's logger for a name given to /admin/loggers:
// root (any case), rest, kgo, connector, connector.<name>, or a Kafka
// Connect name that maps onto one of them. Any other name is an error that
// lists the names: a level set on it would change nothing.
func Name(name string) (string, error) {
	n := strings.TrimSpace(name)
	switch {
	case strings.EqualFold(n, Root):
		return Root, nil
	case n == REST, n == Kafka, n == Connector:
		return n, nil
	case strings.HasPrefix(n, Connector+".") && len(n) > len(Connector)+1:
		return n, nil
	}
	for _, k := range kafkaNames {
		if n == k.kafka || strings.HasPrefix(n, k.kafka+".") {
			return k.own, nil
		}
	}
	return "", fmt.Errorf("logger %q does not exist in Conveyor: use %s (everything), %s (the REST server), %s (the Kafka clients of connectors and tasks), "+
		"%s (every connector and its tasks) or %s.<connector name>; the Kafka Connect names %s map onto %s and %s onto %s, "+
		"and the runtime's other records have no name of their own (set %s)",
		name, Root, REST, Kafka, Connector, Connector, kafkaNames[0].kafka, kafkaNames[0].own, kafkaNames[1].kafka, kafkaNames[1].own, Root)
}
