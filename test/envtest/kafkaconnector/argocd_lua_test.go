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

package kafkaconnector

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

// toLua turns a decoded JSON value into Lua values the way Argo CD hands
// obj to a health script (objects and arrays as tables, numbers as
// numbers).
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case int64:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	}
	panic(fmt.Sprintf("toLua: %T", v))
}

// argoHealth runs config/argocd/health.lua on u with gopher-lua (the Lua
// that Argo CD embeds) and returns its status and message.
func argoHealth(t *testing.T, u *unstructured.Unstructured) (string, string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(envkit.RepoRoot(), "config", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, u.Object))
	fn, err := L.LoadString(string(script))
	if err != nil {
		t.Fatalf("loading health.lua: %v", err)
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		t.Fatalf("health.lua on %s: %v", u.GetName(), err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %v, want a table", L.Get(-1))
	}
	return ret.RawGetString("status").String(), ret.RawGetString("message").String()
}
