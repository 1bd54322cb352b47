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

package apitest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestInstalledCRDs reads the CRDs back from the API server and checks what the Foundation
// issue promises: CEL validations, the status subresource on both kinds, the scale
// subresource with a label selector path on ConnectCluster, short names and the conveyor
// category, and field descriptions (for kubectl explain).
func TestInstalledCRDs(t *testing.T) {
	cases := []struct {
		name      string
		shortName string
		scale     bool
	}{
		{"connectclusters.connect.conveyor.dev", "cc", true},
		{"kafkaconnectors.connect.conveyor.dev", "kctr", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			if err := k8sClient.Get(ctx(t), key("", tc.name), crd); err != nil {
				t.Fatal(err)
			}
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			if len(versions) != 1 {
				t.Fatalf("versions = %d, want 1 (v1alpha1)", len(versions))
			}
			v := versions[0].(map[string]any)
			if _, ok, _ := unstructured.NestedMap(v, "subresources", "status"); !ok {
				t.Errorf("no status subresource")
			}
			sel, _, _ := unstructured.NestedString(v, "subresources", "scale", "labelSelectorPath")
			spec, _, _ := unstructured.NestedString(v, "subresources", "scale", "specReplicasPath")
			if tc.scale && (sel != ".status.selector" || spec != ".spec.replicas") {
				t.Errorf("scale subresource: labelSelectorPath %q, specReplicasPath %q", sel, spec)
			}
			if !tc.scale && spec != "" {
				t.Errorf("unexpected scale subresource")
			}
			short, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
			cats, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "categories")
			if strings.Join(short, ",") != tc.shortName || strings.Join(cats, ",") != "conveyor" {
				t.Errorf("shortNames %v, categories %v", short, cats)
			}
			cols, _, _ := unstructured.NestedSlice(v, "additionalPrinterColumns")
			var readyCol bool
			for _, c := range cols {
				if c.(map[string]any)["jsonPath"] == `.status.conditions[?(@.type=="Ready")].status` {
					readyCol = true
				}
			}
			if !readyCol {
				t.Errorf("no printer column reads the Ready condition: %v", cols)
			}
			specSchema, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "spec")
			var rules, undocumented int
			var walk func(path string, s map[string]any)
			walk = func(path string, s map[string]any) {
				if r, ok := s["x-kubernetes-validations"].([]any); ok {
					rules += len(r)
				}
				props, _ := s["properties"].(map[string]any)
				for name, p := range props {
					pm := p.(map[string]any)
					if d, _ := pm["description"].(string); d == "" {
						undocumented++
						t.Errorf("%s.%s has no description", path, name)
					}
					walk(path+"."+name, pm)
				}
			}
			walk("spec", specSchema)
			if rules < 2 {
				t.Errorf("spec carries %d x-kubernetes-validations rules, want CEL rules", rules)
			}
			t.Logf("%s: %d CEL rules under spec, %d undocumented fields", tc.name, rules, undocumented)
		})
	}
}
