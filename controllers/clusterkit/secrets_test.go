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

package clusterkit

import (
	"reflect"
	"strings"
	"testing"
)

func TestSecretRefs(t *testing.T) {
	refs, err := SecretRefs(map[string]string{
		"connection.password": "${secret:db-creds:password}",
		"connection.url":      "postgres://${secret:db-creds:user}:${secret:db-creds:password}@h/db",
		"other":               "${secret:api.token:token} and ${env:HOME} and ${file:/x:y}",
		"plain":               "no placeholders $ { } ${secre:x:y}",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []SecretRef{{"api.token", "token"}, {"db-creds", "password"}, {"db-creds", "user"}}
	if !reflect.DeepEqual(refs, want) {
		t.Fatalf("SecretRefs = %v, want %v", refs, want)
	}
	if names := SecretNames(refs, []SecretRef{{"z", "k"}, {"db-creds", "k"}}); !reflect.DeepEqual(names, []string{"api.token", "db-creds", "z"}) {
		t.Fatalf("SecretNames = %v", names)
	}
	if names := SecretNames(); names != nil {
		t.Fatalf("SecretNames() = %v, want nil", names)
	}

	bad := map[string]string{
		"missing key":  "${secret:db}",
		"empty name":   "${secret::k}",
		"bad name":     "${secret:DB_Creds:k}",
		"bad key char": "${secret:db:a/b}",
	}
	for what, v := range bad {
		_, err := SecretRefs(map[string]string{"conn.pw": v})
		if err == nil {
			t.Errorf("%s: %q accepted", what, v)
			continue
		}
		if !strings.Contains(err.Error(), `"conn.pw"`) {
			t.Errorf("%s: error %q does not name the config key", what, err)
		}
	}
}
