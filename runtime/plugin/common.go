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
	"context"
	"fmt"
	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/guard"
	"github.com/conveyor-dev/conveyor/runtime/transforms"
)

// MaxTasks is the upper bound of tasks.max, as the KafkaConnector's
// spec.tasksMax has it.
const MaxTasks = 1000

// maxMillis bounds durations in milliseconds: a year.
const maxMillis = 365 * 24 * 3600 * 1000

// Keys of the configuration fields every connector has. They match Kafka
// Connect's ConnectorConfig and SinkConnectorConfig.
const (
	KeyName                    = "name"
	KeyConnectorClass          = "connector.class"
	KeyTasksMax                = "tasks.max"
	KeyKeyConverter            = "key.converter"
	KeyValueConverter          = "value.converter"
	KeyHeaderConverter         = "header.converter"
	KeyTransforms              = "transforms"
	KeyPredicates              = "predicates"
	KeyErrorsRetryTimeout      = "errors.retry.timeout"
	KeyErrorsRetryMaxDelay     = "errors.retry.delay.max.ms"
	KeyErrorsTolerance         = "errors.tolerance"
	KeyErrorsLogEnable         = "errors.log.enable"
	KeyErrorsLogIncludeMessage = "errors.log.include.messages"
	// Sink connectors only.
	KeyTopics         = "topics"
	KeyTopicsRegex    = "topics.regex"
	KeyDLQTopicName   = "errors.deadletterqueue.topic.name"
	KeyDLQHeaders     = "errors.deadletterqueue.context.headers.enable"
	KeyDLQReplication = "errors.deadletterqueue.topic.replication.factor"
)

// Groups of the common fields, as Kafka names them.
const (
	GroupCommon        = "Common"
	GroupTransforms    = "Transforms"
	GroupPredicates    = "Predicates"
	GroupErrorHandling = "Error Handling"
)

// CommonSpec returns the fields every connector of the kind has: Kafka
// Connect's common connector fields, plus topics/topics.regex and the
// dead-letter queue for sinks.
func CommonSpec(kind Kind) ConfigSpec {
	fields := []ConfigField{
		{Name: KeyName, Type: TypeString, Required: true, Group: GroupCommon, Importance: ImportanceHigh, Width: WidthMedium,
			DisplayName: "Connector name", Validator: NonEmpty(),
			Doc: "Globally unique name to use for this connector."},
		{Name: KeyConnectorClass, Type: TypeString, Required: true, Group: GroupCommon, Importance: ImportanceHigh, Width: WidthLong,
			DisplayName: "Connector class",
			Doc:         "Name or alias of the class for this connector, for example dev.conveyor.connect.file.FileSourceConnector or FileSource."},
		{Name: KeyTasksMax, Type: TypeInt, Default: "1", Group: GroupCommon, Importance: ImportanceHigh, Width: WidthShort,
			DisplayName: "Tasks max", Validator: AtLeast(1), Max: MaxTasks,
			Doc: "Maximum number of tasks to use for this connector. The connector runs min(tasks.max, its natural limit) tasks."},
		{Name: KeyKeyConverter, Type: TypeClass, Group: GroupCommon, Importance: ImportanceLow, Width: WidthShort,
			DisplayName: "Key converter class",
			Doc:         "Converter class for record keys (JsonConverter, StringConverter, ByteArrayConverter); overrides the worker default."},
		{Name: KeyValueConverter, Type: TypeClass, Group: GroupCommon, Importance: ImportanceLow, Width: WidthShort,
			DisplayName: "Value converter class",
			Doc:         "Converter class for record values; overrides the worker default."},
		{Name: KeyHeaderConverter, Type: TypeClass, Group: GroupCommon, Importance: ImportanceLow, Width: WidthShort,
			DisplayName: "Header converter class",
			Doc:         "Converter class for header values; overrides the worker default."},
		{Name: KeyTransforms, Type: TypeList, Group: GroupTransforms, Importance: ImportanceLow, Width: WidthLong,
			DisplayName: "Transforms",
			Doc:         "Aliases for the transformations to apply to records, in order."},
		{Name: KeyPredicates, Type: TypeList, Group: GroupPredicates, Importance: ImportanceLow, Width: WidthLong,
			DisplayName: "Predicates",
			Doc:         "Aliases for the predicates used by transformations."},
		{Name: KeyErrorsRetryTimeout, Type: TypeLong, Default: "0", Group: GroupErrorHandling, Importance: ImportanceMedium, Width: WidthMedium,
			DisplayName: "Retry Timeout for Errors", Validator: AtLeast(-1), Max: maxMillis,
			Doc: "Maximum duration in milliseconds that a failed operation is retried; 0 means no retries, -1 infinite retries."},
		{Name: KeyErrorsRetryMaxDelay, Type: TypeLong, Default: "60000", Group: GroupErrorHandling, Importance: ImportanceMedium, Width: WidthMedium,
			DisplayName: "Maximum Delay Between Retries for Errors", Validator: AtLeast(1), Max: maxMillis,
			Doc: "Maximum duration in milliseconds between consecutive retry attempts."},
		{Name: KeyErrorsTolerance, Type: TypeString, Default: "none", Group: GroupErrorHandling, Importance: ImportanceMedium, Width: WidthShort,
			DisplayName: "Error Tolerance", Validator: OneOf("none", "all"), Recommended: []string{"none", "all"},
			Doc: "Behaviour for tolerating errors during conversion and transformation: 'none' fails the task, 'all' skips problem records."},
		{Name: KeyErrorsLogEnable, Type: TypeBoolean, Default: "false", Group: GroupErrorHandling, Importance: ImportanceMedium, Width: WidthShort,
			DisplayName: "Log Errors",
			Doc:         "If true, write each error and the details of the failed operation to the worker log."},
		{Name: KeyErrorsLogIncludeMessage, Type: TypeBoolean, Default: "false", Group: GroupErrorHandling, Importance: ImportanceMedium, Width: WidthShort,
			DisplayName: "Log Error Details",
			Doc:         "Whether to include the record in the error log."},
	}
	if kind == KindSink {
		fields = append(fields,
			ConfigField{Name: KeyTopics, Type: TypeList, Group: GroupCommon, Importance: ImportanceHigh, Width: WidthLong,
				DisplayName: "Topics",
				Doc:         "List of topics to consume, separated by commas. Set either topics or topics.regex."},
			ConfigField{Name: KeyTopicsRegex, Type: TypeString, Group: GroupCommon, Importance: ImportanceHigh, Width: WidthLong,
				DisplayName: "Topics regex", Validator: ValidRegexp(),
				Doc: "Regular expression giving the topics to consume. Set either topics or topics.regex."},
			consumerGroupTypeField(),
			ConfigField{Name: KeyDLQTopicName, Type: TypeString, Group: GroupErrorHandling, Importance: ImportanceMedium, Width: WidthMedium,
				DisplayName: "Dead Letter Queue Topic Name",
				Doc:         "Topic to which failed records are written; empty disables the dead-letter queue."},
			ConfigField{Name: KeyDLQReplication, Type: TypeInt, Default: "3", Group: GroupErrorHandling, Importance: ImportanceMedium, Width: WidthMedium,
				DisplayName: "Dead Letter Queue Topic Replication Factor", Validator: replicationFactor(), Max: 32767,
				Doc: "Replication factor of the dead-letter queue topic when it is created."},
			ConfigField{Name: KeyDLQHeaders, Type: TypeBoolean, Default: "false", Group: GroupErrorHandling, Importance: ImportanceMedium, Width: WidthMedium,
				DisplayName: "Enable Error Context Headers",
				Doc:         "If true, add headers describing the error to records written to the dead-letter queue."},
		)
	}
	if kind == KindSource {
		fields = append(fields, exactlyOnceFields()...)
	}
	// Keep Kafka's group order: Common, Transforms, Predicates, Error Handling, Exactly Once.
	order := map[string]int{GroupCommon: 0, GroupTransforms: 1, GroupPredicates: 2, GroupErrorHandling: 3, GroupExactlyOnce: 4}
	sort.SliceStable(fields, func(i, j int) bool { return order[fields[i].Group] < order[fields[j].Group] })
	return ConfigSpec{Fields: fields}
}

// ConfigInfo is one field of a validation result: its definition, its
// position within its group and the validated value.
type ConfigInfo struct {
	Definition ConfigField
	// Order is the 1-based position of the field within its group.
	Order int
	Value ConfigValue
}

// ValidationResult is the outcome of [ValidateConfig], shaped like Kafka's
// ConfigInfos (PUT /connector-plugins/{p}/config/validate).
type ValidationResult struct {
	// Name is the plugin class.
	Name string
	// ErrorCount is the total number of errors over all fields.
	ErrorCount int
	// Groups are the field groups in order.
	Groups []string
	// Configs holds every field of the plugin's full spec, plus entries for
	// keys outside the spec that the connector reported errors on.
	Configs []ConfigInfo
}

// Errors returns every error as a FieldError, in field order.
func (r ValidationResult) Errors() []FieldError {
	var out []FieldError
	for _, c := range r.Configs {
		for _, m := range c.Value.Errors {
			out = append(out, FieldError{Name: c.Value.Name, Message: m})
		}
	}
	return out
}

// ValidateConfig validates a connector configuration the way the REST
// validate endpoint and connector creation need it: the common fields and
// the plugin's spec, the common cross-field rules (a sink sets exactly one
// of topics and topics.regex), and, when those checks found no error in the
// plugin's own fields, the connector's own Validate.
//
// With [WithWorkerExactlyOnce], a source connector's exactly-once keys are
// also checked against the worker's mode and the connector's declared
// support (see [ValidateExactlyOnce]).
func ValidateConfig(ctx context.Context, p Plugin, config map[string]string, opts ...ValidateOption) ValidationResult {
	var vo validateOptions
	for _, o := range opts {
		o(&vo)
	}
	spec := p.FullSpec()
	values := spec.Validate(config)
	index := map[string]int{}
	for i, v := range values {
		index[v.Name] = i
	}
	addErr := func(name, msg string) {
		if i, ok := index[name]; ok {
			values[i].Errors = append(values[i].Errors, msg)
			return
		}
		var shown *string
		if raw, ok := config[name]; ok {
			shown = ptr(raw)
			if clientconfig.IsPassword(name) {
				shown = ptr(HiddenValue)
			}
		}
		values = append(values, ConfigValue{Name: name, Value: shown, RecommendedValues: []string{}, Errors: []string{msg}, Visible: true})
		index[name] = len(values) - 1
	}
	if p.Kind == KindSink {
		hasTopics := len(SplitList(config[KeyTopics])) > 0
		hasRegex := strings.TrimSpace(config[KeyTopicsRegex]) != ""
		switch {
		case hasTopics && hasRegex:
			msg := "topics and topics.regex are mutually exclusive: set only one of them"
			addErr(KeyTopics, msg)
			addErr(KeyTopicsRegex, msg)
		case !hasTopics && !hasRegex:
			msg := "Must configure one of topics or topics.regex"
			addErr(KeyTopics, msg)
			addErr(KeyTopicsRegex, msg)
		}
		if dlq := strings.TrimSpace(config[KeyDLQTopicName]); dlq != "" {
			if slices.Contains(SplitList(config[KeyTopics]), dlq) {
				addErr(KeyDLQTopicName, fmt.Sprintf("%s=%q is one of the consumed topics: the dead-letter queue must be another topic", KeyDLQTopicName, dlq))
			}
			if expr := strings.TrimSpace(config[KeyTopicsRegex]); expr != "" {
				if re, err := regexp.Compile("^(?:" + expr + ")$"); err == nil && re.MatchString(dlq) {
					addErr(KeyDLQTopicName, fmt.Sprintf("%s=%q matches %s, the consumed topics: the dead-letter queue must be another topic", KeyDLQTopicName, dlq, KeyTopicsRegex))
				}
			}
		}
	}
	// The cluster's internal topics are off limits in every topic key.
	for _, fe := range vo.reserved.Validate(config) {
		addErr(fe.Name, fe.Message)
	}
	// Topic creation (KIP-158) of a source's topics.
	if p.Kind == KindSource {
		_, fes := ParseTopicCreation(config)
		for _, fe := range fes {
			addErr(fe.Name, fe.Message)
		}
	}
	// Client overrides: only properties of the table, only as far as the
	// policy allows, with good values; never ignored.
	for _, e := range clientconfig.Check(config, vo.policy, vo.security) {
		addErr(e.Key, e.Message)
	}
	// Transforms and predicates are checked here, so a connector with a
	// bad chain is refused at creation instead of failing its tasks.
	for _, fe := range transforms.Validate(config) {
		addErr(fe.Name, fe.Message)
	}
	ownClean := true
	for _, f := range p.Spec.Fields {
		if len(values[index[f.Name]].Errors) > 0 {
			ownClean = false
		}
	}
	if ownClean && p.NewConnector != nil {
		conn := p.NewConnector()
		var fes []FieldError
		if err := guard.Call("validating the connector", func() error { fes = conn.Validate(vo.grants.Context(ctx), config); return nil }); err != nil {
			fes = []FieldError{{Name: KeyConnectorClass, Message: err.Error()}}
		}
		for _, fe := range fes {
			addErr(fe.Name, fe.Message)
		}
		if p.Kind == KindSink {
			for _, fe := range ValidateShareMode(conn, config) {
				addErr(fe.Name, fe.Message)
			}
		}
		if p.Kind == KindSource && vo.eosMode != "" {
			for _, fe := range ValidateExactlyOnce(conn, config, vo.eosMode) {
				addErr(fe.Name, fe.Message)
			}
		}
	}
	res := ValidationResult{Name: p.Class, Groups: spec.Groups()}
	for _, v := range values {
		res.ErrorCount += len(v.Errors)
		def := ConfigField{Name: v.Name, Type: TypeString, Importance: ImportanceLow, Width: WidthNone}
		if clientconfig.IsPassword(v.Name) {
			def.Type = TypePassword
		}
		order := 0
		if f := spec.Field(v.Name); f != nil {
			def = *f
			order = spec.Order(v.Name)
		}
		res.Configs = append(res.Configs, ConfigInfo{Definition: def, Order: order, Value: v})
	}
	return res
}

// SinkTopics returns the topics a sink connector consumes: the topics list,
// or every topic on the cluster matching topics.regex (sorted).
func SinkTopics(ctx context.Context, cc ConnectorContext, config map[string]string) ([]string, error) {
	if topics := SplitList(config[KeyTopics]); len(topics) > 0 {
		return topics, nil
	}
	expr := strings.TrimSpace(config[KeyTopicsRegex])
	if expr == "" {
		return nil, fmt.Errorf("sink connector: set %s or %s", KeyTopics, KeyTopicsRegex)
	}
	all, err := cc.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing topics for %s: %w", KeyTopicsRegex, err)
	}
	return MatchTopics(expr, all)
}

// TopicsRegex is the pattern a topics.regex sink subscribes with: the whole
// topic name must match, as in Kafka's consumer (Pattern.matches), so
// "orders" does not match "orders-archive".
func TopicsRegex(expr string) string { return "^(?:" + expr + ")$" }

// MatchTopics returns the topics of all that a sink with topics.regex expr
// consumes, sorted.
func MatchTopics(expr string, all []string) ([]string, error) {
	re, err := regexp.Compile(TopicsRegex(expr))
	if err != nil {
		return nil, fmt.Errorf("sink connector: %s %q: %w", KeyTopicsRegex, expr, err)
	}
	var out []string
	for _, t := range all {
		if re.MatchString(t) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// SinkNaturalLimit is the natural task limit of a sink that can spread its
// partitions over tasks freely: the total partition count of its topics,
// with reason [TopicPartitions]. Topics that do not exist yet count zero.
//
// In share mode (consumer.group.type=share) no partition count bounds the
// tasks: the limit is [NoLimit] with reason [ShareGroupMode].
func SinkNaturalLimit(ctx context.Context, cc ConnectorContext, config map[string]string) (int, Reason, error) {
	if ShareMode(config) {
		return NoLimit, ShareGroupMode, nil
	}
	topics, err := SinkTopics(ctx, cc, config)
	if err != nil {
		return 0, TopicPartitions, err
	}
	if len(topics) == 0 {
		return 0, TopicPartitions, nil
	}
	parts, err := cc.TopicPartitions(ctx, topics)
	if err != nil {
		return 0, TopicPartitions, fmt.Errorf("reading partition counts of %v: %w", topics, err)
	}
	total := 0
	for _, t := range topics {
		total += int(parts[t])
	}
	return total, TopicPartitions, nil
}

// SinkTaskConfigs returns max copies of config: the task configs of a sink
// whose tasks share the work through the consumer group, each seeing the
// whole configuration.
func SinkTaskConfigs(config map[string]string, max int) []map[string]string {
	out := make([]map[string]string, max)
	for i := range out {
		out[i] = make(map[string]string, len(config))
		maps.Copy(out[i], config)
	}
	return out
}

// replicationFactor accepts -1 (the broker's default) or a positive
// replication factor, like Kafka's check of
// errors.deadletterqueue.topic.replication.factor.
func replicationFactor() Validator {
	return func(v any) error {
		if n, ok := toFloat(v); ok && (n == 0 || n < -1 || n > 32767) {
			return fmt.Errorf("Value must be -1 (the broker's default) or a positive replication factor")
		}
		return nil
	}
}
