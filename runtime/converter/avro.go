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
	"fmt"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// AvroClass is Confluent's Avro converter; Conveyor's speaks the same wire
// format (magic byte 0, the 4-byte schema id, the Avro binary encoding)
// and maps schemas as Confluent's AvroData does.
const AvroClass = "io.confluent.connect.avro.AvroConverter"

// Avro converts between Connect data and Avro in the Confluent wire
// format, with the schemas in a schema registry.
type Avro struct {
	reg *registry
	// writers caches, per Connect schema (by pointer: schemas are
	// immutable and shared), the Avro schema it maps to and its text.
	writers *lru[*data.Schema, *avroWriter]
}

type avroWriter struct {
	schema avro.Schema
	api    avro.API
	text   string
	record string // full name of a record schema, for the subject strategies
	ids    subjectIDs
}

// avroReader is a registered schema parsed for reading.
type avroReader struct {
	schema  avro.Schema
	api     avro.API
	connect *data.Schema
}

// NewAvro returns an Avro converter configured with the registry keys.
func NewAvro(config map[string]string, isKey bool) (*Avro, error) {
	reg, err := newRegistry(config, isKey)
	if err != nil {
		return nil, err
	}
	return &Avro{reg: reg, writers: newLRU[*data.Schema, *avroWriter](reg.byID.n)}, nil
}

// parseAvro parses schema text with a cache of its own, and returns an
// API with encoder and decoder caches of its own: two versions of a
// subject name the same record with different fields, and hamba/avro's
// shared caches would mix them up (a version 2 record written with
// version 1's encoder was seen).
func parseAvro(text string) (avro.Schema, avro.API, error) {
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, nil, err
	}
	return s, avro.Config{}.Freeze(), nil
}

// FromConnectData writes value in the wire format with the schema that
// its Connect schema maps to (registered or looked up under its subject),
// or with the subject's latest schema when use.latest.version is set.
func (c *Avro) FromConnectData(topic string, schema *data.Schema, value any) ([]byte, error) {
	out, null, err := c.AppendConnectData(make([]byte, 0, 64), topic, schema, value)
	if null || err != nil {
		return nil, err
	}
	return out, nil
}

// AppendConnectData implements [Appender]: FromConnectData into dst. A
// struct of plain fields is written straight into Avro's encoding
// (avro_encode.go); other values through hamba/avro's generic encoder.
func (c *Avro) AppendConnectData(dst []byte, topic string, schema *data.Schema, value any) ([]byte, bool, error) {
	if value == nil && (schema == nil || schema.Optional) {
		return dst, true, nil
	}
	if schema == nil {
		return dst, false, fmt.Errorf("the Avro converter needs a schema: the record's value has none (use a source or transform that sets one)")
	}
	w, err := c.writer(schema)
	if err != nil {
		return dst, false, err
	}
	subject, err := c.reg.subject(topic, w.record)
	if err != nil {
		return dst, false, err
	}
	var id int
	target, api := w.schema, w.api
	if c.reg.useLatest {
		ss, err := c.reg.latest(subject)
		if err != nil {
			return dst, false, err
		}
		r, err := c.reader(ss.ID)
		if err != nil {
			return dst, false, err
		}
		id, target, api = ss.ID, r.schema, r.api
	} else if id, err = w.ids.get(subject, func() (int, error) {
		return c.reg.idFor(subject, sr.Schema{Schema: w.text, Type: sr.TypeAvro})
	}); err != nil {
		return dst, false, err
	}
	out, err := c.reg.header.AppendEncode(dst, id, nil)
	if err != nil {
		return dst, false, err
	}
	if body, ok := appendAvroDirect(out, target, schema, value); ok {
		return body, false, nil
	}
	native, err := toAvro("", target, schema, value)
	if err != nil {
		return dst, false, err
	}
	body, err := api.Marshal(target, native)
	if err != nil {
		return dst, false, fmt.Errorf("encoding Avro with schema id %d: %w", id, err)
	}
	return append(out, body...), false, nil
}

func (c *Avro) writer(schema *data.Schema) (*avroWriter, error) {
	if w, ok := c.writers.get(schema); ok {
		return w, nil
	}
	text, err := avroSchemaText(schema)
	if err != nil {
		return nil, err
	}
	parsed, api, err := parseAvro(text)
	if err != nil {
		return nil, fmt.Errorf("the Avro schema made from %s does not parse: %w", schema, err)
	}
	w := &avroWriter{schema: parsed, api: api, text: text}
	if rs, ok := parsed.(*avro.RecordSchema); ok {
		w.record = rs.FullName()
	}
	c.writers.put(schema, w)
	return w, nil
}

func (c *Avro) reader(id int) (*avroReader, error) {
	v, err := c.reg.parsed(id, func(s sr.Schema) (any, error) {
		if s.Type != sr.TypeAvro {
			return nil, fmt.Errorf("is a %s schema, not Avro: read it with the matching converter", s.Type)
		}
		parsed, api, err := parseAvro(s.Schema)
		if err != nil {
			return nil, err
		}
		cs, err := connectSchemaOf("", parsed, false)
		if err != nil {
			return nil, err
		}
		return &avroReader{schema: parsed, api: api, connect: cs}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*avroReader), nil
}

// ToConnectData reads the wire format: the schema by its id from the
// registry (cached), then the value.
func (c *Avro) ToConnectData(topic string, b []byte) (*data.Schema, any, error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	id, body, err := c.reg.decodeHeader(b)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	r, err := c.reader(id)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	var native any
	if err := r.api.Unmarshal(r.schema, body, &native); err != nil {
		return nil, nil, fmt.Errorf("topic %s: decoding Avro with schema id %d: %w", topic, id, err)
	}
	v, err := fromAvro("", r.schema, r.connect, native)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: schema id %d: %w", topic, id, err)
	}
	return r.connect, v, nil
}

func fieldPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func atField(path string) string {
	if path == "" {
		return "the value"
	}
	return "field " + strings.TrimPrefix(path, ".")
}

// subjectIDs remembers a writer schema's id under each subject it was
// written to (a few: its topics), so that a cached schema's record finds
// its id without hashing the schema's text.
type subjectIDs struct {
	mu  sync.Mutex
	ids map[string]int
}

func (s *subjectIDs) get(subject string, lookup func() (int, error)) (int, error) {
	s.mu.Lock()
	id, ok := s.ids[subject]
	s.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := lookup()
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[string]int{}
	}
	s.ids[subject] = id
	s.mu.Unlock()
	return id, nil
}
