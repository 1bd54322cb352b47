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
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// ProtobufClass is Confluent's Protobuf converter; Conveyor's speaks the
// same wire format (magic byte 0, the 4-byte schema id, the message-index
// array as zig-zag varints with a single 0 for [0], the message bytes) and
// registers schemas as .proto text (schemaType PROTOBUF).
const ProtobufClass = "io.confluent.connect.protobuf.ProtobufConverter"

// Protobuf converts between Connect data and Protobuf messages in the
// Confluent wire format, with the schemas in a schema registry.
type Protobuf struct {
	reg     *registry
	writers *lru[*data.Schema, *protoWriterSchema]
}

// protoWriterSchema is a Connect schema's .proto text, compiled.
type protoWriterSchema struct {
	text    string
	record  string // the root message's full name, for the subject strategies
	message protoreflect.MessageDescriptor
	ids     subjectIDs
}

// protoReader is a registered schema compiled for reading.
type protoReader struct {
	file    protoreflect.FileDescriptor
	mu      sync.Mutex
	connect map[protoreflect.FullName]*data.Schema // by message, as the indexes pick them
}

// NewProtobuf returns a Protobuf converter configured with the registry keys.
func NewProtobuf(config map[string]string, isKey bool) (*Protobuf, error) {
	reg, err := newRegistry(config, isKey)
	if err != nil {
		return nil, err
	}
	return &Protobuf{reg: reg, writers: newLRU[*data.Schema, *protoWriterSchema](reg.byID.n)}, nil
}

// FromConnectData writes value as the first message of the .proto its
// Connect schema maps to (registered or looked up under its subject), or
// of the subject's latest schema when use.latest.version is set.
func (c *Protobuf) FromConnectData(topic string, schema *data.Schema, value any) ([]byte, error) {
	if value == nil && (schema == nil || schema.Optional) {
		return nil, nil
	}
	if schema == nil {
		return nil, fmt.Errorf("the Protobuf converter needs a schema: the record's value has none (use a source or transform that sets one)")
	}
	w, err := c.writer(schema)
	if err != nil {
		return nil, err
	}
	subject, err := c.reg.subject(topic, w.record)
	if err != nil {
		return nil, err
	}
	var id int
	md := w.message
	if c.reg.useLatest {
		ss, err := c.reg.latest(subject)
		if err != nil {
			return nil, err
		}
		r, err := c.reader(ss.ID)
		if err != nil {
			return nil, err
		}
		if r.file.Messages().Len() == 0 {
			return nil, fmt.Errorf("the latest schema of subject %q (id %d) has no message", subject, ss.ID)
		}
		id, md = ss.ID, r.file.Messages().Get(0)
	} else if id, err = w.ids.get(subject, func() (int, error) {
		return c.reg.idFor(subject, sr.Schema{Schema: w.text, Type: sr.TypeProtobuf})
	}); err != nil {
		return nil, err
	}
	st, ok := value.(*data.Struct)
	if !ok {
		return nil, fmt.Errorf("the value is a %T, not a struct of schema %s", value, schema)
	}
	m := dynamicpb.NewMessage(md)
	if err := toProto("", schema, st, m); err != nil {
		return nil, err
	}
	out, err := c.reg.header.AppendEncode(make([]byte, 0, 64), id, []int{0})
	if err != nil {
		return nil, err
	}
	out, err = proto.MarshalOptions{Deterministic: true}.MarshalAppend(out, m)
	if err != nil {
		return nil, fmt.Errorf("encoding Protobuf with schema id %d: %w", id, err)
	}
	return out, nil
}

func (c *Protobuf) writer(schema *data.Schema) (*protoWriterSchema, error) {
	if w, ok := c.writers.get(schema); ok {
		return w, nil
	}
	text, record, err := protoSchemaText(schema)
	if err != nil {
		return nil, err
	}
	fd, err := compileProto(text, nil)
	if err != nil {
		return nil, fmt.Errorf("the .proto made from %s: %w", schema, err)
	}
	w := &protoWriterSchema{text: text, record: record, message: fd.Messages().Get(0)}
	c.writers.put(schema, w)
	return w, nil
}

func (c *Protobuf) reader(id int) (*protoReader, error) {
	v, err := c.reg.parsed(id, func(s sr.Schema) (any, error) {
		if s.Type != sr.TypeProtobuf {
			return nil, fmt.Errorf("is a %s schema, not Protobuf: read it with the matching converter", s.Type)
		}
		refs, err := c.references(s.References)
		if err != nil {
			return nil, err
		}
		fd, err := compileProto(s.Schema, refs)
		if err != nil {
			return nil, err
		}
		return &protoReader{file: fd, connect: map[protoreflect.FullName]*data.Schema{}}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*protoReader), nil
}

// references fetches the .proto texts a schema imports by reference
// (recursively), by import name.
func (c *Protobuf) references(refs []sr.SchemaReference) (map[string]string, error) {
	out := map[string]string{}
	for len(refs) > 0 {
		ref := refs[0]
		refs = refs[1:]
		if _, done := out[ref.Name]; done {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ss, err := c.reg.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		cancel()
		if err != nil {
			return nil, registryError(fmt.Sprintf("reading reference %q (subject %q version %d)", ref.Name, ref.Subject, ref.Version), err)
		}
		out[ref.Name] = ss.Schema.Schema
		refs = append(refs, ss.Schema.References...)
	}
	return out, nil
}

// ToConnectData reads the wire format: the schema by its id (cached), the
// message indexes, then the message.
func (c *Protobuf) ToConnectData(topic string, b []byte) (*data.Schema, any, error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	id, body, err := c.reg.decodeHeader(b)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	index, body, err := c.reg.header.DecodeIndex(body, 64)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: schema id %d: the message indexes after the schema id do not decode: %w", topic, id, err)
	}
	r, err := c.reader(id)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	md, err := messageAt(r.file, index)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: schema id %d: %w", topic, id, err)
	}
	cs, err := r.schema(md)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: schema id %d: %w", topic, id, err)
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(body, m); err != nil {
		return nil, nil, fmt.Errorf("topic %s: decoding Protobuf message %s with schema id %d: %w", topic, md.FullName(), id, err)
	}
	v, err := fromProto("", cs, m)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s: schema id %d: %w", topic, id, err)
	}
	return cs, v, nil
}

// schema returns the Connect schema of one of the file's messages.
func (r *protoReader) schema(md protoreflect.MessageDescriptor) (*data.Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.connect[md.FullName()]; ok {
		return s, nil
	}
	s, err := connectOfMessage("", md, map[protoreflect.FullName]bool{})
	if err != nil {
		return nil, err
	}
	r.connect[md.FullName()] = s
	return s, nil
}

// messageAt follows the message indexes: the first picks a top-level
// message, each next one a message nested in it.
func messageAt(fd protoreflect.FileDescriptor, index []int) (protoreflect.MessageDescriptor, error) {
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range index {
		if i < 0 || i >= msgs.Len() {
			return nil, fmt.Errorf("message index %v points at no message of the schema", index)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("empty message index")
	}
	return md, nil
}
