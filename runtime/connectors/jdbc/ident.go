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

package jdbc

import (
	"fmt"
	"strings"
)

// SplitQualified splits a possibly qualified name ("table",
// "schema.table") into its parts; quote is the database's identifier quote
// (" or `), doubled inside a quoted part for itself. Unquoted parts keep
// their case and lose the blanks around them; quoted parts stay as
// written.
func SplitQualified(s string, quote byte) ([]string, error) {
	s = strings.TrimSpace(s)
	var parts []string
	var cur strings.Builder
	quoted, wasQuoted := false, false
	part := func() string {
		if wasQuoted {
			return cur.String()
		}
		return strings.TrimSpace(cur.String())
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == quote:
			if i+1 < len(s) && s[i+1] == quote {
				cur.WriteByte(quote)
				i++
			} else {
				quoted = false
			}
		case quoted:
			cur.WriteByte(c)
		case c == quote:
			if cur.Len() > 0 {
				return nil, fmt.Errorf("table name %q: a %c in the middle of a name", s, quote)
			}
			quoted, wasQuoted = true, true
		case c == '.':
			if cur.Len() == 0 && !wasQuoted {
				return nil, fmt.Errorf("table name %q has an empty part", s)
			}
			parts = append(parts, part())
			cur.Reset()
			wasQuoted = false
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, fmt.Errorf("table name %q has an unterminated %c", s, quote)
	}
	if cur.Len() == 0 && !wasQuoted {
		return nil, fmt.Errorf("table name %q is empty or ends with a dot", s)
	}
	return append(parts, part()), nil
}
