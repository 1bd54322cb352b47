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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/conveyor-dev/conveyor/runtime/data"
)

// Full names of the Protobuf messages the logical types map to, as
// Confluent's ProtobufData maps them.
const (
	pbTimestamp = "google.protobuf.Timestamp"
	pbDate      = "google.type.Date"
	pbTimeOfDay = "google.type.TimeOfDay"
	pbDecimal   = "confluent.type.Decimal"
)

// Keys of Confluent's field_meta params that carry what Protobuf has no
// place for.
const (
	pbConnectType     = "connect.type"     // int8, int16 (written as int32)
	pbConnectName     = "connect.name"     // a struct's name when the message's full name is not it
	pbConnectDefault  = "connect.default"  // a default as JSON
	pbConnectOptional = "connect.optional" // an optional array or map (null reads back as null)
	pbMetaExtension   = 1088               // confluent.field_meta and message_meta in confluent/meta.proto
)

// pbKnownFiles are the imports a Confluent registry knows without a
// reference (its "known dependencies") beyond protocompile's standard
// google/protobuf ones; they are compiled from these texts, which define
// the same messages with the same field numbers.
var pbKnownFiles = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta { string doc = 1; map<string, string> params = 2; }
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
message Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }
`,
	"google/type/date.proto": `syntax = "proto3";
package google.type;
message Date { int32 year = 1; int32 month = 2; int32 day = 3; }
`,
	"google/type/timeofday.proto": `syntax = "proto3";
package google.type;
message TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; int32 nanos = 4; }
`,
}

var pbImportOf = map[string]string{
	pbTimestamp: "google/protobuf/timestamp.proto",
	pbDate:      "google/type/date.proto",
	pbTimeOfDay: "google/type/timeofday.proto",
	pbDecimal:   "confluent/type/decimal.proto",
}

// protoWriter derives a .proto file from a Connect struct schema: the
// root message first (message index [0]), then one top-level message per
// other struct schema.
type protoWriter struct {
	pkg      string
	imports  map[string]bool
	messages []string                // rendered, root first
	names    map[*data.Schema]string // struct schema -> message name
	taken    map[string]bool
}

// protoSchemaText returns the .proto text of a Connect struct schema and
// the root message's full name.
func protoSchemaText(s *data.Schema) (string, string, error) {
	if s.Type != data.TypeStruct {
		return "", "", fmt.Errorf("the Protobuf converter writes messages: the schema is %s, not a struct (wrap the value in a struct, e.g. with the HoistField transform)", s.Type)
	}
	w := &protoWriter{imports: map[string]bool{}, names: map[*data.Schema]string{}, taken: map[string]bool{}}
	if i := strings.LastIndex(s.Name, "."); i > 0 && !slices.ContainsFunc(strings.Split(s.Name[:i], "."), func(p string) bool { return !pbIdent(p) }) {
		w.pkg = s.Name[:i] // a name like my-db.public.t.Value has none: connect.name keeps it
	}
	root, err := w.message("", s, "ConnectDefault")
	if err != nil {
		return "", "", err
	}
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n")
	if w.pkg != "" {
		fmt.Fprintf(&b, "package %s;\n", w.pkg)
	}
	for _, imp := range slices.Sorted(maps.Keys(w.imports)) {
		fmt.Fprintf(&b, "import %q;\n", imp)
	}
	for _, m := range w.messages {
		b.WriteString("\n")
		b.WriteString(m)
	}
	full := root
	if w.pkg != "" {
		full = w.pkg + "." + root
	}
	return b.String(), full, nil
}

func (w *protoWriter) message(path string, s *data.Schema, fallback string) (string, error) {
	if n, ok := w.names[s]; ok {
		return n, nil
	}
	for other, n := range w.names { // one message for a struct and its optional copy
		if other.Name == s.Name && sameStruct(other, s) {
			w.names[s] = n
			return n, nil
		}
	}
	name := s.Name[strings.LastIndex(s.Name, ".")+1:]
	if name == "" || !pbIdent(name) {
		name = fallback
	}
	for base, i := name, 2; w.taken[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	w.taken[name] = true
	w.names[s] = name
	slot := len(w.messages)
	w.messages = append(w.messages, "")
	full := name
	if w.pkg != "" {
		full = w.pkg + "." + name
	}
	var b strings.Builder
	fmt.Fprintf(&b, "message %s {\n", name)
	if s.Name != full {
		w.imports["confluent/meta.proto"] = true
		fmt.Fprintf(&b, "  option (confluent.message_meta) = { params: [{ key: %s, value: %s }] };\n", pbQuote(pbConnectName), pbQuote(s.Name))
	}
	for i, f := range s.Fields {
		fp := fieldPath(path, f.Name)
		if !pbIdent(f.Name) {
			return "", fmt.Errorf("%s: %q is not a Protobuf field name (letters, digits and _, not starting with a digit): rename it, e.g. with the ReplaceField transform", atField(fp), f.Name)
		}
		line, err := w.field(fp, f, i+1)
		if err != nil {
			return "", err
		}
		b.WriteString("  " + line + "\n")
	}
	b.WriteString("}\n")
	w.messages[slot] = b.String()
	return name, nil
}

// sameStruct reports whether two struct schemas differ at most in being
// optional and in their default.
func sameStruct(a, b *data.Schema) bool {
	a2, b2 := *a, *b
	a2.Optional, a2.Default, b2.Optional, b2.Default = false, nil, false, nil
	return a2.Equal(&b2)
}

// field renders one field: its label, type, name, number and the
// field_meta params that keep what Protobuf has no place for.
func (w *protoWriter) field(path string, f data.Field, number int) (string, error) {
	s := f.Schema
	params := map[string]string{}
	maps.Copy(params, s.Parameters)
	label := ""
	var typ string
	var err error
	switch s.Type {
	case data.TypeArray:
		if typ, err = w.elemType(path+"[]", s.Elem, params); err != nil {
			return "", err
		}
		label = "repeated "
		if s.Optional {
			params[pbConnectOptional] = "true"
		}
	case data.TypeMap:
		var kt, vt string
		switch s.Key.Type {
		case data.TypeInt8, data.TypeInt16, data.TypeInt32, data.TypeInt64, data.TypeString, data.TypeBoolean:
			if s.Key.IsLogical() || len(s.Key.Parameters) > 0 {
				return "", fmt.Errorf("%s: map keys of %s cannot be Protobuf map keys", atField(path), s.Key)
			}
			kt, _ = w.scalar(s.Key, map[string]string{})
		default:
			return "", fmt.Errorf("%s: map keys of type %s cannot be Protobuf map keys (integers, strings and booleans can)", atField(path), s.Key.Type)
		}
		if vt, err = w.elemType(path+"<value>", s.Elem, map[string]string{}); err != nil {
			return "", err
		}
		if s.Elem.Type == data.TypeInt8 || s.Elem.Type == data.TypeInt16 || len(s.Elem.Parameters) > 0 {
			return "", fmt.Errorf("%s: map values of %s lose their type in Protobuf: use int32 or plain values", atField(path), s.Elem)
		}
		typ = "map<" + kt + ", " + vt + ">"
		if s.Optional {
			params[pbConnectOptional] = "true"
		}
	default:
		if typ, err = w.elemType(path, s, params); err != nil {
			return "", err
		}
		if s.Optional {
			label = "optional "
		} else if s.Type == data.TypeStruct || s.IsLogical() {
			params[pbConnectOptional] = "false" // message fields have presence: mark the required ones
		}
	}
	if s.Default != nil {
		d, err := jsonDefault(path, s)
		if err != nil {
			return "", err
		}
		params[pbConnectDefault] = string(d.(json.RawMessage))
	}
	line := fmt.Sprintf("%s%s %s = %d", label, typ, f.Name, number)
	if len(params) > 0 {
		w.imports["confluent/meta.proto"] = true
		var ps []string
		for _, k := range slices.Sorted(maps.Keys(params)) {
			ps = append(ps, fmt.Sprintf("{ key: %s, value: %s }", pbQuote(k), pbQuote(params[k])))
		}
		line += " [(confluent.field_meta) = { params: [" + strings.Join(ps, ", ") + "] }]"
	}
	return line + ";", nil
}

// elemType is the type of a singular value or of a list's or map's
// elements; params gains connect.type for int8 and int16.
func (w *protoWriter) elemType(path string, s *data.Schema, params map[string]string) (string, error) {
	switch {
	case s.Type == data.TypeArray:
		return "", fmt.Errorf("%s: an array inside an array or map cannot be mapped to Protobuf (no nested repeated fields): wrap it in a struct", atField(path))
	case s.Type == data.TypeMap:
		return "", fmt.Errorf("%s: a map inside an array or map cannot be mapped to Protobuf (no nested repeated fields): wrap it in a struct", atField(path))
	case s.Type == data.TypeStruct:
		return w.message(path, s, pbCamel(path))
	}
	return w.scalar(s, params)
}

func (w *protoWriter) scalar(s *data.Schema, params map[string]string) (string, error) {
	logical := map[string]string{data.TimestampName: pbTimestamp, data.DateName: pbDate, data.TimeName: pbTimeOfDay, data.DecimalName: pbDecimal}
	if m, ok := logical[s.Name]; ok {
		w.imports[pbImportOf[m]] = true
		return "." + m, nil
	}
	switch s.Type {
	case data.TypeInt8, data.TypeInt16:
		params[pbConnectType] = string(s.Type)
		return "int32", nil
	case data.TypeInt32:
		return "int32", nil
	case data.TypeInt64:
		return "int64", nil
	case data.TypeFloat32:
		return "float", nil
	case data.TypeFloat64:
		return "double", nil
	case data.TypeBoolean:
		return "bool", nil
	case data.TypeString:
		return "string", nil
	case data.TypeBytes:
		return "bytes", nil
	}
	return "", fmt.Errorf("schema type %s cannot be mapped to Protobuf", s.Type)
}

func pbIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// pbCamel names an unnamed struct's message after its field path.
func pbCamel(path string) string {
	var b strings.Builder
	up := true
	for _, r := range path {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' && b.Len() > 0:
			if up && r >= 'a' && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			up = false
		default:
			up = true
		}
	}
	if b.Len() == 0 {
		return "ConnectDefault"
	}
	return b.String()
}

// pbQuote writes a Protobuf string literal: printable ASCII as is, every
// other byte as an octal escape.
func pbQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03o", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// compileProto compiles registered .proto text with protocompile; imports
// are the standard google/protobuf files, Confluent's known dependencies
// (pbKnownFiles) and the schema's references (refs: import name → text).
func compileProto(text string, refs map[string]string) (protoreflect.FileDescriptor, error) {
	files := map[string]string{}
	maps.Copy(files, pbKnownFiles)
	maps.Copy(files, refs)
	const main = "conveyor-registered-schema.proto"
	files[main] = text
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(files)}),
	}
	out, err := c.Compile(context.Background(), main)
	if err != nil {
		return nil, fmt.Errorf("the .proto schema does not compile: %w", err)
	}
	return out[0], nil
}

// pbMeta reads the params of Confluent's field_meta or message_meta
// (extension 1088) from options, scanning their wire form so that it
// does not matter whether the extension was resolved.
func pbMeta(opts proto.Message) map[string]string {
	if opts == nil {
		return nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(opts)
	if err != nil {
		return nil
	}
	var out map[string]string
	for _, meta := range pbFields(b, pbMetaExtension) {
		for _, entry := range pbFields(meta, 2) {
			var k, v string
			if x := pbFields(entry, 1); len(x) > 0 {
				k = string(x[len(x)-1])
			}
			if x := pbFields(entry, 2); len(x) > 0 {
				v = string(x[len(x)-1])
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// pbFields returns the bytes of every length-delimited field num in b.
func pbFields(b []byte, num protowire.Number) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return out
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return out
			}
			out = append(out, v)
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return out
		}
		b = b[l:]
	}
	return out
}

// connectOfMessage maps a message descriptor to a Connect struct schema.
// What has no Connect form is an error naming the field.
func connectOfMessage(path string, md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) (*data.Schema, error) {
	if seen[md.FullName()] {
		return nil, fmt.Errorf("%s: message %s contains itself: recursive messages cannot be mapped to Connect schemas", atField(path), md.FullName())
	}
	seen[md.FullName()] = true
	defer delete(seen, md.FullName())
	name := string(md.FullName())
	if n, ok := pbMeta(md.Options())[pbConnectName]; ok {
		name = n
	}
	fields := make([]data.Field, 0, md.Fields().Len())
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		fp := fieldPath(path, string(fd.Name()))
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			return nil, fmt.Errorf("%s: is in oneof %s: oneofs cannot be mapped to Connect schemas", atField(fp), od.Name())
		}
		meta := pbMeta(fd.Options())
		var s *data.Schema
		var err error
		switch {
		case fd.IsMap():
			k, err := connectOfField(fp+"<key>", fd.MapKey(), nil, seen)
			if err != nil {
				return nil, err
			}
			v, err := connectOfField(fp+"<value>", fd.MapValue(), nil, seen)
			if err != nil {
				return nil, err
			}
			s = data.MapOf(k, v)
			s.Optional = meta[pbConnectOptional] == "true"
		case fd.IsList():
			e, err := connectOfField(fp+"[]", fd, meta, seen)
			if err != nil {
				return nil, err
			}
			s = data.ArrayOf(e)
			s.Optional = meta[pbConnectOptional] == "true"
		default:
			if s, err = connectOfField(fp, fd, meta, seen); err != nil {
				return nil, err
			}
			s.Optional = fd.HasOptionalKeyword() || fd.Message() != nil && !pbRequiredMessage(fd)
		}
		if d, ok := meta[pbConnectDefault]; ok {
			if s.Default, err = defaultFromJSON(fp, s, []byte(d)); err != nil {
				return nil, err
			}
		}
		fields = append(fields, data.F(string(fd.Name()), s))
	}
	return data.StructOf(name, fields...), nil
}

// pbRequiredMessage: message fields have presence in Protobuf; Conveyor
// writes the optional ones with the optional keyword, so a message field
// without it is required when the file marks it (field_meta), and
// optional otherwise, as Confluent reads them.
func pbRequiredMessage(fd protoreflect.FieldDescriptor) bool {
	return pbMeta(fd.Options())[pbConnectOptional] == "false"
}

// connectOfField maps one value's type (a singular field, or a list's or
// map's elements).
func connectOfField(path string, fd protoreflect.FieldDescriptor, meta map[string]string, seen map[protoreflect.FullName]bool) (*data.Schema, error) {
	var s *data.Schema
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		switch fd.Message().FullName() {
		case pbTimestamp:
			s = data.TimestampSchema()
		case pbDate:
			s = data.DateSchema()
		case pbTimeOfDay:
			s = data.TimeSchema()
		case pbDecimal:
			sc, ok := meta[data.DecimalScaleParam]
			n, err := strconv.Atoi(sc)
			if !ok || err != nil {
				return nil, fmt.Errorf("%s: a confluent.type.Decimal without a scale in its field_meta params cannot be mapped to a Connect Decimal (which has one scale)", atField(path))
			}
			s = data.DecimalSchema(int32(n))
		default:
			return connectOfMessage(path, fd.Message(), seen)
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		s = &data.Schema{Type: data.TypeInt32}
		if t := data.Type(meta[pbConnectType]); t == data.TypeInt8 || t == data.TypeInt16 {
			s.Type = t
		}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		s = &data.Schema{Type: data.TypeInt64}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		s = &data.Schema{Type: data.TypeInt64} // values above MaxInt64 are an error when read
	case protoreflect.FloatKind:
		s = &data.Schema{Type: data.TypeFloat32}
	case protoreflect.DoubleKind:
		s = &data.Schema{Type: data.TypeFloat64}
	case protoreflect.BoolKind:
		s = &data.Schema{Type: data.TypeBoolean}
	case protoreflect.StringKind, protoreflect.EnumKind:
		s = &data.Schema{Type: data.TypeString}
	case protoreflect.BytesKind:
		s = &data.Schema{Type: data.TypeBytes}
	default:
		return nil, fmt.Errorf("%s: Protobuf kind %s cannot be mapped", atField(path), fd.Kind())
	}
	for k, v := range meta {
		if !strings.HasPrefix(k, "connect.") {
			if s.Parameters == nil {
				s.Parameters = map[string]string{}
			}
			s.Parameters[k] = v
		}
	}
	return s, nil
}
