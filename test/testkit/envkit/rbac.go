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

package envkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// OperatorConfig creates the user name, gives it the generated ClusterRole
// (config/rbac/role.yaml, what the chart installs) and returns its client
// configuration. An operator started with it runs with exactly the
// permissions it ships with: a missing verb fails the suite, and RBAC's
// escalation check applies when it grants the workers "get" on Secrets.
func (e *Env) OperatorConfig(name string) (*rest.Config, error) {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading the generated ClusterRole: %w", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		return nil, fmt.Errorf("decoding config/rbac/role.yaml: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{}
	binding.Name = role.Name
	binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
	binding.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}}
	ctx := context.Background()
	for _, o := range []client.Object{role, binding} {
		if err := e.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	user, err := e.Env.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding the user %s: %w", name, err)
	}
	return user.Config(), nil
}
