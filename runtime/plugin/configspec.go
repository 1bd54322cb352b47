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
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/conveyor-dev/conveyor/runtime/properties"
)

// FieldType is the type of a configuration field. The string values are
// Kafka's ConfigDef.Type names, as the REST validate endpoint shows them.
type FieldType string

// Field types and their parsed Go values.
const (
	TypeString   FieldType = "STRING"   // string
	TypeInt      FieldType = "INT"      // int (32-bit range)
	TypeLong     FieldType = "LONG"     // int64
	TypeDouble   FieldType = "DOUBLE"   // float64
	TypeBoolean  FieldType = "BOOLEAN"  // bool ("true"/"false", any case)
	TypeList     FieldType = "LIST"     // []string, comma-separated, trimmed
	TypePassword FieldType = "PASSWORD" // Password, never shown
	TypeClass    FieldType = "CLASS"    // string (a class name or alias)
)

// Importance ranks a field for documentation (Kafka's ConfigDef.Importance).
type Importance string

// Importance levels.
const (
	ImportanceHigh   Importance = "HIGH"
	ImportanceMedium Importance = "MEDIUM"
	ImportanceLow    Importance = "LOW"
)

// Width hints at the size of an input box (Kafka's ConfigDef.Width).
type Width string

// Widths.
const (
	WidthNone   Width = "NONE"
	WidthShort  Width = "SHORT"
	WidthMedium Width = "MEDIUM"
	WidthLong   Width = "LONG"
)

// HiddenValue replaces password values wherever configuration is shown.
const HiddenValue = "[hidden]"

// Validator checks a parsed field value (see [FieldType] for the Go types)
// and returns a message-style error ("must be at least 1") when it is bad.
type Validator func(value any) error

// ConfigField describes one configuration field of a connector.
type ConfigField struct {
	// Name is the configuration key, for example "batch.size".
	Name string
	// Type is the field type; values are parsed into its Go type.
	Type FieldType
	// Default is the default in text form ("" means none, so an absent
	// optional field reads as the zero value).
	Default string
	// Required means the field has no default and must be set (non-empty).
	Required bool
	// Doc documents the field for users.
	Doc string
	// Group is the documentation group, for example "Common" or "File".
	Group string
	// Importance ranks the field; empty means medium.
	Importance Importance
	// Width hints at the input size; empty means none.
	Width Width
	// DisplayName is a human name; empty means Name.
	DisplayName string
	// Dependents are fields whose validity depends on this one.
	Dependents []string
	// Recommended lists suggested values shown by validation.
	Recommended []string
	// Validator checks the parsed value; nil accepts any value of the type.
	Validator Validator
	// Max is the largest value a number field (INT, LONG, DOUBLE) accepts.
	// Every number field has one, and registration refuses a plugin with a
	// number field without it: a size or count that a tenant writes into a
	// connector config must not be able to make a worker allocate what Go
	// cannot recover from, killing every connector on it. Validation
	// refuses a larger value, naming the key and the bound. Not for other
	// types (0).
	Max float64
}

// check runs the field's bound and its Validator on a parsed value.
func (f ConfigField) check(v any) error {
	if err := f.checkMax(v); err != nil {
		return err
	}
	if f.Validator != nil {
		return f.Validator(v)
	}
	return nil
}

// isNumber says whether fields of the type are numbers, which need a Max.
func (t FieldType) isNumber() bool { return t == TypeInt || t == TypeLong || t == TypeDouble }

// checkMax refuses a number above the field's Max.
func (f ConfigField) checkMax(v any) error {
	if n, ok := toFloat(v); ok && f.Max > 0 && n > f.Max {
		return fmt.Errorf("Value must be at most %s, the upper bound of %s", fmtNum(f.Max), f.Name)
	}
	return nil
}

// DefaultValue returns the default as Kafka's ConfigKeyInfo.default_value
// shows it: nil for a required field or one without a default.
func (f ConfigField) DefaultValue() *string {
	if f.Required || f.Default == "" {
		return nil
	}
	d := f.Default
	return &d
}

// ImportanceOrDefault returns Importance, or MEDIUM when unset.
func (f ConfigField) ImportanceOrDefault() Importance {
	if f.Importance == "" {
		return ImportanceMedium
	}
	return f.Importance
}

// WidthOrDefault returns Width, or NONE when unset.
func (f ConfigField) WidthOrDefault() Width {
	if f.Width == "" {
		return WidthNone
	}
	return f.Width
}

// DisplayNameOrDefault returns DisplayName, or Name when unset.
func (f ConfigField) DisplayNameOrDefault() string {
	if f.DisplayName == "" {
		return f.Name
	}
	return f.DisplayName
}

// ConfigSpec is the self-describing configuration of a connector: what the
// REST endpoints /connector-plugins/{p}/config and .../config/validate show,
// and what [ConfigSpec.Parse] enforces.
type ConfigSpec struct {
	Fields []ConfigField
}

// Field returns the field with the name, or nil.
func (s ConfigSpec) Field(name string) *ConfigField {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// Groups returns the field groups in order of first appearance.
func (s ConfigSpec) Groups() []string {
	var out []string
	for _, f := range s.Fields {
		if f.Group != "" && !slices.Contains(out, f.Group) {
			out = append(out, f.Group)
		}
	}
	return out
}

// Order returns the 1-based position of the field within its group, as
// Kafka's ConfigKeyInfo.order.
func (s ConfigSpec) Order(name string) int {
	f := s.Field(name)
	if f == nil {
		return 0
	}
	n := 0
	for _, g := range s.Fields {
		if g.Group == f.Group {
			n++
		}
		if g.Name == name {
			return n
		}
	}
	return 0
}

func (s ConfigSpec) check() error {
	seen := map[string]bool{}
	for _, f := range s.Fields {
		if f.Name == "" {
			return errors.New("config field without a name")
		}
		if seen[f.Name] {
			return fmt.Errorf("config field %q defined twice", f.Name)
		}
		seen[f.Name] = true
		if !f.Type.valid() {
			return fmt.Errorf("config field %q has unknown type %q", f.Name, f.Type)
		}
		if f.Type.isNumber() && f.Max <= 0 {
			return fmt.Errorf("config field %q has no upper bound: set Max, the largest value a worker can afford", f.Name)
		}
		if !f.Type.isNumber() && f.Max != 0 {
			return fmt.Errorf("config field %q: Max is for number fields, not %s", f.Name, f.Type)
		}
		if f.Required && f.Default != "" {
			return fmt.Errorf("config field %q is required but has default %q", f.Name, f.Default)
		}
		if f.Default != "" {
			v, err := ParseValue(f.Type, f.Default)
			if err != nil {
				return fmt.Errorf("config field %q: default: %w", f.Name, err)
			}
			if err := f.check(v); err != nil {
				return fmt.Errorf("config field %q: default %q: %w", f.Name, f.Default, err)
			}
		}
	}
	return nil
}

func (t FieldType) valid() bool {
	switch t {
	case TypeString, TypeInt, TypeLong, TypeDouble, TypeBoolean, TypeList, TypePassword, TypeClass:
		return true
	}
	return false
}

// Password is a secret configuration value. It prints as [HiddenValue] so
// it does not leak into logs; call Value for the secret.
type Password string

// Value returns the secret.
func (p Password) Value() string { return string(p) }

// String returns [HiddenValue].
func (p Password) String() string { return HiddenValue }

// LogValue returns [HiddenValue] for log/slog.
func (p Password) LogValue() slog.Value { return slog.StringValue(HiddenValue) }

// ParseValue converts the text form of a value into the Go value of the
// field type.
func ParseValue(t FieldType, raw string) (any, error) {
	s := strings.TrimSpace(raw)
	switch t {
	case TypeString, TypeClass:
		return s, nil
	case TypePassword:
		return Password(raw), nil
	case TypeInt:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("not a number of type INT")
		}
		return int(n), nil
	case TypeLong:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not a number of type LONG")
		}
		return n, nil
	case TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return nil, fmt.Errorf("not a number of type DOUBLE")
		}
		return f, nil
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("expected value to be either true or false")
	case TypeList:
		return SplitList(s), nil
	}
	return nil, fmt.Errorf("unknown field type %q", t)
}

// SplitList splits a comma-separated list, trimming blanks and dropping
// empty items.
func SplitList(s string) []string { return properties.SplitList(s) }

// ConfigValue is the validation result of one field, shaped like Kafka's
// ConfigValueInfo so the REST validate endpoint can render it directly.
type ConfigValue struct {
	// Name is the field name.
	Name string
	// Value is the value as given, or the default; nil when neither exists.
	// Passwords show as [HiddenValue].
	Value *string
	// RecommendedValues are suggested values.
	RecommendedValues []string
	// Errors are human-readable problems; empty when the value is valid.
	Errors []string
	// Visible says whether the field applies to this configuration.
	Visible bool
}

// FieldError is one problem with one configuration field.
type FieldError struct {
	// Name is the configuration key.
	Name string
	// Message says what is wrong and, where possible, how to fix it.
	Message string
}

// Error implements error.
func (e FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Name, e.Message) }

// Validate checks a configuration against the spec and returns one
// ConfigValue per spec field, in spec order. Keys not in the spec are
// left to their own checks: converters', transforms' and predicates' (in
// ValidateConfig, with client overrides, which must be in the table of
// runtime/clientconfig).
func (s ConfigSpec) Validate(config map[string]string) []ConfigValue {
	out := make([]ConfigValue, 0, len(s.Fields))
	for _, f := range s.Fields {
		cv := ConfigValue{Name: f.Name, RecommendedValues: f.Recommended, Visible: true}
		if cv.RecommendedValues == nil {
			cv.RecommendedValues = []string{}
		}
		raw, present := config[f.Name]
		if present && strings.TrimSpace(raw) == "" && f.Type != TypeString && f.Type != TypePassword && f.Type != TypeList {
			present = false // an empty number or boolean means "not set"
		}
		if f.Required && (!present || strings.TrimSpace(raw) == "") {
			cv.Errors = append(cv.Errors, fmt.Sprintf("Missing required configuration %q which has no default value.", f.Name))
			if present {
				cv.Value = ptr(raw)
			}
			out = append(out, cv)
			continue
		}
		if !present {
			if f.Default == "" {
				out = append(out, cv)
				continue
			}
			raw = f.Default
		}
		if f.Type == TypePassword {
			cv.Value = ptr(HiddenValue)
		} else {
			cv.Value = ptr(raw)
		}
		v, err := ParseValue(f.Type, raw)
		if err == nil {
			err = f.check(v)
		}
		if err != nil {
			shown := raw
			if f.Type == TypePassword {
				shown = HiddenValue
			}
			cv.Errors = append(cv.Errors, fmt.Sprintf("Invalid value %s for configuration %s: %s", shown, f.Name, err))
		}
		out = append(out, cv)
	}
	return out
}

func ptr(s string) *string { return &s }

// ConfigError lists every problem found by [ConfigSpec.Parse].
type ConfigError struct {
	Fields []FieldError
}

// Error lists the problems, one per field.
func (e *ConfigError) Error() string {
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Error()
	}
	return "invalid connector configuration: " + strings.Join(msgs, "; ")
}

// Parse checks a configuration against the spec, applies defaults and
// converts values to their Go types. On failure the error is a
// *ConfigError naming every bad field.
func (s ConfigSpec) Parse(config map[string]string) (Config, error) {
	c := Config{values: map[string]any{}, raw: make(map[string]string, len(config))}
	for k, v := range config {
		c.raw[k] = v
	}
	var errs []FieldError
	for _, cv := range s.Validate(config) {
		for _, m := range cv.Errors {
			errs = append(errs, FieldError{Name: cv.Name, Message: m})
		}
	}
	if len(errs) > 0 {
		return Config{}, &ConfigError{Fields: errs}
	}
	for _, f := range s.Fields {
		raw, present := config[f.Name]
		if !present || (strings.TrimSpace(raw) == "" && f.Type != TypeString && f.Type != TypePassword && f.Type != TypeList) {
			if f.Default == "" {
				continue
			}
			raw = f.Default
		}
		v, _ := ParseValue(f.Type, raw) // validated above
		c.values[f.Name] = v
	}
	return c, nil
}

// Config is a parsed configuration: typed values for spec fields (defaults
// applied) and the raw strings of every key. Getters return the zero value
// for unset or unknown fields.
type Config struct {
	values map[string]any
	raw    map[string]string
}

// Get returns the parsed value of a spec field and whether it is set.
func (c Config) Get(name string) (any, bool) {
	v, ok := c.values[name]
	return v, ok
}

// Raw returns the raw string of any key (spec field or not).
func (c Config) Raw(name string) (string, bool) {
	v, ok := c.raw[name]
	return v, ok
}

// String returns a STRING or CLASS field.
func (c Config) String(name string) string { v, _ := c.values[name].(string); return v }

// Int returns an INT field.
func (c Config) Int(name string) int { v, _ := c.values[name].(int); return v }

// Long returns a LONG field.
func (c Config) Long(name string) int64 { v, _ := c.values[name].(int64); return v }

// Double returns a DOUBLE field.
func (c Config) Double(name string) float64 { v, _ := c.values[name].(float64); return v }

// Bool returns a BOOLEAN field.
func (c Config) Bool(name string) bool { v, _ := c.values[name].(bool); return v }

// List returns a LIST field (nil when unset).
func (c Config) List(name string) []string { v, _ := c.values[name].([]string); return v }

// Password returns a PASSWORD field.
func (c Config) Password(name string) Password { v, _ := c.values[name].(Password); return v }

// AtLeast accepts numbers >= min.
func AtLeast(min float64) Validator {
	return func(v any) error {
		if n, ok := toFloat(v); ok && n < min {
			return fmt.Errorf("Value must be at least %s", fmtNum(min))
		}
		return nil
	}
}

// Between accepts numbers in [min, max].
func Between(min, max float64) Validator {
	return func(v any) error {
		if n, ok := toFloat(v); ok && (n < min || n > max) {
			return fmt.Errorf("Value must be between %s and %s", fmtNum(min), fmtNum(max))
		}
		return nil
	}
}

// OneOf accepts strings equal (case-insensitively) to one of values.
func OneOf(values ...string) Validator {
	return func(v any) error {
		s, _ := v.(string)
		for _, x := range values {
			if strings.EqualFold(s, x) {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(values, ", "))
	}
}

// NonEmpty accepts non-blank strings and non-empty lists.
func NonEmpty() Validator {
	return func(v any) error {
		switch x := v.(type) {
		case string:
			if strings.TrimSpace(x) == "" {
				return errors.New("String must be non-empty")
			}
		case []string:
			if len(x) == 0 {
				return errors.New("List must be non-empty")
			}
		}
		return nil
	}
}

// ValidRegexp accepts strings that compile as Go regular expressions.
func ValidRegexp() Validator {
	return func(v any) error {
		s, _ := v.(string)
		if _, err := regexp.Compile(s); err != nil {
			return fmt.Errorf("not a valid regular expression: %v", err)
		}
		return nil
	}
}

// All combines validators; the first failure wins.
func All(vs ...Validator) Validator {
	return func(v any) error {
		for _, x := range vs {
			if x == nil {
				continue
			}
			if err := x(v); err != nil {
				return err
			}
		}
		return nil
	}
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
