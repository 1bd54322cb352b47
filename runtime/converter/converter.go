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

// Package converter turns record keys and values between their Connect
// form (a [data.Schema] and a Go value) and the bytes stored in Kafka,
// compatibly with Kafka Connect's converters: JsonConverter (with and
// without the schema envelope), StringConverter and ByteArrayConverter;
// and with Confluent's: AvroConverter, JsonSchemaConverter and ProtobufConverter, in the
// schema registry's wire format.
package converter

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Converter converts between Connect data and bytes. Implementations are
// safe for concurrent use.
type Converter interface {
	// FromConnectData serialises a value with its (possibly nil) schema for
	// the topic. A nil value with a nil schema yields nil bytes (a Kafka
	// tombstone / null key).
	FromConnectData(topic string, schema *data.Schema, value any) ([]byte, error)
	// ToConnectData deserialises bytes read from the topic. Nil or empty
	// bytes yield a nil value.
	ToConnectData(topic string, b []byte) (*data.Schema, any, error)
}

// Appender is implemented by converters that can serialise into a
// caller's buffer, so a runner converting a batch fills one buffer
// instead of allocating per record. It returns dst extended by the
// serialised value, whose bytes are exactly what FromConnectData returns;
// null reports that the value serialises to nil bytes (a tombstone or a
// null key), in which case dst is returned unchanged. On an error the
// content of dst beyond its original length is undefined.
type Appender interface {
	AppendConnectData(dst []byte, topic string, schema *data.Schema, value any) (out []byte, null bool, err error)
}

var (
	_ Appender = (*JSON)(nil)
	_ Appender = StringConverter{}
	_ Appender = (*Avro)(nil)
)

// Class names of the built-in converters (Kafka's).
const (
	JSONClass      = "org.apache.kafka.connect.json.JsonConverter"
	StringClass    = "org.apache.kafka.connect.storage.StringConverter"
	ByteArrayClass = "org.apache.kafka.connect.converters.ByteArrayConverter"
)

// Configuration keys understood by the converters (after the
// key.converter. / value.converter. prefix is removed).
const (
	// KeySchemasEnable toggles the JSON schema envelope (default true).
	KeySchemasEnable = "schemas.enable"
	// KeyDecimalFormat is BASE64 (default) or NUMERIC: how JSON writes decimals.
	KeyDecimalFormat = "decimal.format"
	// KeyReplaceNullWithDefault: when a JSON payload is null and the schema
	// has a default, use the default (default true).
	KeyReplaceNullWithDefault = "replace.null.with.default"
	// KeyEncoding is the string converter's character encoding; only UTF-8
	// is supported.
	KeyEncoding = "converter.encoding"
)

// DefaultClass is the converter used when neither the connector nor the
// worker names one.
const DefaultClass = JSONClass

type factory func(config map[string]string, isKey bool) (Converter, error)

var classes = map[string]factory{
	JSONClass:       func(c map[string]string, k bool) (Converter, error) { return NewJSON(c) },
	StringClass:     func(c map[string]string, k bool) (Converter, error) { return NewString(c) },
	ByteArrayClass:  func(c map[string]string, k bool) (Converter, error) { return ByteArray{}, nil },
	AvroClass:       func(c map[string]string, k bool) (Converter, error) { return NewAvro(c, k) },
	JSONSchemaClass: func(c map[string]string, k bool) (Converter, error) { return NewJSONSchema(c, k) },
	ProtobufClass:   func(c map[string]string, k bool) (Converter, error) { return NewProtobuf(c, k) },
}

var aliases = map[string]string{
	"JsonConverter":       JSONClass,
	"json":                JSONClass,
	"StringConverter":     StringClass,
	"string":              StringClass,
	"ByteArrayConverter":  ByteArrayClass,
	"bytes":               ByteArrayClass,
	"bytearray":           ByteArrayClass,
	"AvroConverter":       AvroClass,
	"avro":                AvroClass,
	"JsonSchemaConverter": JSONSchemaClass,
	"jsonschema":          JSONSchemaClass,
	"ProtobufConverter":   ProtobufClass,
	"protobuf":            ProtobufClass,
}

// Resolve maps a class name or alias to the full class name.
func Resolve(class string) (string, error) {
	c := strings.TrimSpace(class)
	if _, ok := classes[c]; ok {
		return c, nil
	}
	if full, ok := aliases[c]; ok {
		return full, nil
	}
	if full, ok := aliases[strings.ToLower(c)]; ok {
		return full, nil
	}
	return "", fmt.Errorf("unknown converter class %q; use one of %s", class, strings.Join(Classes(), ", "))
}

// ConfigKey documents one configuration key of a converter (without the
// key.converter. or value.converter. prefix); Type is named as in Kafka's
// ConfigDef.
type ConfigKey struct{ Name, Type, Default, Doc string }

// configKeys are the keys each converter class reads.
var configKeys = map[string][]ConfigKey{
	JSONClass: {
		{KeySchemasEnable, "BOOLEAN", "true", "Whether the JSON carries the schema next to the payload ({\"schema\":...,\"payload\":...})."},
		{KeyDecimalFormat, "STRING", "BASE64", "How decimals are written: BASE64 (the unscaled value's bytes, Kafka's default) or NUMERIC (a JSON number)."},
		{KeyReplaceNullWithDefault, "BOOLEAN", "true", "Whether a null payload of a field with a default reads as the default."},
	},
	StringClass:     {{KeyEncoding, "STRING", "UTF-8", "Character encoding of the strings; only UTF-8 is supported."}},
	ByteArrayClass:  {},
	AvroClass:       registryKeys,
	JSONSchemaClass: registryKeys,
	ProtobufClass:   registryKeys,
}

// ConfigKeys returns the configuration keys of a converter class (or
// alias).
func ConfigKeys(class string) ([]ConfigKey, error) {
	full, err := Resolve(class)
	if err != nil {
		return nil, err
	}
	return configKeys[full], nil
}

// Classes lists the full class names of the built-in converters, sorted.
func Classes() []string {
	out := make([]string, 0, len(classes))
	for c := range classes {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// New returns the converter of a class (or alias) configured with config,
// whose keys are unprefixed ("schemas.enable").
func New(class string, config map[string]string, isKey bool) (Converter, error) {
	full, err := Resolve(class)
	if err != nil {
		return nil, err
	}
	c, err := classes[full](config, isKey)
	if err != nil {
		return nil, fmt.Errorf("configuring %s: %w", full, err)
	}
	return c, nil
}

// Prefix returns "key.converter" or "value.converter".
func Prefix(isKey bool) string {
	if isKey {
		return "key.converter"
	}
	return "value.converter"
}

// FromConfig builds the key (isKey) or value converter of a connector the
// way Kafka Connect does: when the connector config names a converter
// class, it and the connector's "<prefix>.*" settings are used; otherwise
// the worker config's class and settings; otherwise [DefaultClass].
// Either map may be nil.
func FromConfig(isKey bool, connector, worker map[string]string) (Converter, error) {
	prefix := Prefix(isKey)
	src := connector
	class := strings.TrimSpace(connector[prefix])
	if class == "" {
		src = worker
		class = strings.TrimSpace(worker[prefix])
	}
	if class == "" {
		class = DefaultClass
	}
	sub := map[string]string{}
	for k, v := range src {
		if rest, ok := strings.CutPrefix(k, prefix+"."); ok {
			sub[rest] = v
		}
	}
	c, err := New(class, sub, isKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prefix, err)
	}
	return c, nil
}

// StringConverter is Kafka's StringConverter: values become their string form
// (UTF-8); bytes are read back as an optional string.
type StringConverter struct{}

// NewString returns a string converter; only UTF-8 is supported.
func NewString(config map[string]string) (StringConverter, error) {
	if enc, ok := config[KeyEncoding]; ok && !strings.EqualFold(strings.ReplaceAll(enc, "-", ""), "utf8") {
		return StringConverter{}, fmt.Errorf("%s=%q: only UTF-8 is supported", KeyEncoding, enc)
	}
	return StringConverter{}, nil
}

// FromConnectData writes the value's string form.
func (c StringConverter) FromConnectData(topic string, schema *data.Schema, value any) ([]byte, error) {
	if b, ok := value.([]byte); ok {
		return b, nil // no copy
	}
	b, null, err := c.AppendConnectData(nil, topic, schema, value)
	if null || err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{} // an empty string is not null
	}
	return b, nil
}

// AppendConnectData implements [Appender]: FromConnectData into dst.
func (StringConverter) AppendConnectData(dst []byte, _ string, _ *data.Schema, value any) ([]byte, bool, error) {
	switch v := value.(type) {
	case nil:
		return dst, true, nil
	case string:
		return append(dst, v...), false, nil
	case []byte:
		return append(dst, v...), false, nil
	case int64: // integer keys are common: skip fmt (same text)
		return strconv.AppendInt(dst, v, 10), false, nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), false, nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), false, nil
	case fmt.Stringer:
		return append(dst, v.String()...), false, nil
	}
	return fmt.Append(dst, value), false, nil
}

// ToConnectData returns an optional string schema and the string.
func (StringConverter) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalStringSchema, nil, nil
	}
	return data.OptionalStringSchema, string(b), nil
}

// ByteArray is Kafka's ByteArrayConverter: passes bytes through unchanged.
type ByteArray struct{}

// FromConnectData accepts a []byte value with a bytes schema or none.
func (ByteArray) FromConnectData(_ string, schema *data.Schema, value any) ([]byte, error) {
	if schema != nil && schema.Type != data.TypeBytes {
		return nil, fmt.Errorf("invalid schema type for ByteArrayConverter: %s", schema.Type)
	}
	switch v := value.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	}
	return nil, fmt.Errorf("ByteArrayConverter is not compatible with objects of type %T", value)
}

// ToConnectData returns an optional bytes schema and the bytes.
func (ByteArray) ToConnectData(_ string, b []byte) (*data.Schema, any, error) {
	return data.OptionalBytesSchema, b, nil
}
