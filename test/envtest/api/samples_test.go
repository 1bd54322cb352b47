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
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSamplesAccepted creates every object of every YAML file in config/samples, decoded
// generically (so a field the types lack is caught by strict field validation), and checks
// that the kustomization lists every sample file.
func TestSamplesAccepted(t *testing.T) {
	dir := filepath.Join(repoRoot, "config", "samples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	kinds := map[string]int{}
	var sampleFiles []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		sampleFiles = append(sampleFiles, filepath.Base(f))
		objs := decodeYAMLObjects(t, f)
		if len(objs) == 0 {
			t.Errorf("%s holds no object", f)
		}
		for _, o := range objs {
			o.SetNamespace(ns)
			kinds[o.GetKind()]++
			t.Run(filepath.Base(f)+"/"+o.GetName(), func(t *testing.T) {
				if err := k8sClient.Create(ctx(t), o, client.FieldValidation("Strict")); err != nil {
					t.Fatalf("the API server refused sample %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			})
		}
	}
	if kinds["ConnectCluster"] < 1 || kinds["KafkaConnector"] < 2 {
		t.Errorf("samples hold %v; want at least one ConnectCluster and two KafkaConnectors (a source and a sink)", kinds)
	}

	kust, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatalf("config/samples needs a kustomization.yaml: %v", err)
	}
	for _, f := range sampleFiles {
		if !strings.Contains(string(kust), "- "+f) {
			t.Errorf("config/samples/kustomization.yaml does not list %s", f)
		}
	}
}

func decodeYAMLObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decoding %s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}
