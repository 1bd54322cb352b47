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

package converter

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// HeaderConverter converts record header values to and from bytes.
type HeaderConverter interface {
	// FromHeader serialises one header value.
	FromHeader(topic, key string, schema *data.Schema, value any) ([]byte, error)
	// ToHeader deserialises one header value read from Kafka.
	ToHeader(topic, key string, b []byte) (*data.Schema, any, error)
}

// SimpleHeaderClass is Kafka's default header converter class, which
// [SimpleHeader] stands in for.
const SimpleHeaderClass = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

// SimpleHeader writes bytes as they are, strings as UTF-8, booleans and
// numbers in their decimal text form, times as epoch milliseconds, and
// anything else as schemaless JSON. It reads UTF-8 values back as optional
// strings and other bytes as optional bytes.
type SimpleHeader struct{}

// FromHeader implements HeaderConverter.
func (SimpleHeader) FromHeader(topic, key string, schema *data.Schema, value any) ([]byte, error) {
	switch v := value.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	case string:
		return []byte(v), nil
	case bool:
		return strconv.AppendBool(nil, v), nil
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		return fmt.Append(nil, v), nil
	case float32:
		return strconv.AppendFloat(nil, float64(v), 'g', -1, 32), nil
	case float64:
		return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
	case time.Time:
		return strconv.AppendInt(nil, v.UnixMilli(), 10), nil
	case data.Decimal:
		return []byte(v.String()), nil
	}
	var b bytes.Buffer
	if err := (data.JSONEncoder{}).Write(&b, schema, value); err != nil {
		return nil, fmt.Errorf("converting header %q for topic %q: %w", key, topic, err)
	}
	return b.Bytes(), nil
}

// ToHeader implements HeaderConverter.
func (SimpleHeader) ToHeader(_, _ string, b []byte) (*data.Schema, any, error) {
	if b == nil {
		return data.OptionalBytesSchema, nil, nil
	}
	if utf8.Valid(b) {
		return data.OptionalStringSchema, string(b), nil
	}
	return data.OptionalBytesSchema, b, nil
}
