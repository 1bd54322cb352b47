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
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/runtime/bundled"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
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
	var connectors []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			t.Errorf("config/samples/kustomization.yaml would break kubectl apply -f config/samples/: name it Kustomization")
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
			if o.GetKind() == "KafkaConnector" {
				connectors = append(connectors, o)
			}
			t.Run(filepath.Base(f)+"/"+o.GetName(), func(t *testing.T) {
				if err := k8sClient.Create(ctx(t), o, client.FieldValidation("Strict")); err != nil {
					t.Fatalf("the API server refused sample %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			})
		}
	}
	for _, o := range connectors {
		validateWithBundledPlugin(t, o)
	}
	// The sink samples in config/samples/sinks need their servers (each
	// sink's package validates its sample against one): here the API
	// server must take them.
	sinkFiles, err := filepath.Glob(filepath.Join(dir, "sinks", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sinkFiles {
		for _, o := range decodeYAMLObjects(t, f) {
			o.SetNamespace(ns)
			t.Run("sinks/"+filepath.Base(f)+"/"+o.GetName(), func(t *testing.T) {
				if err := k8sClient.Create(ctx(t), o, client.FieldValidation("Strict")); err != nil {
					t.Fatalf("the API server refused sample %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			})
		}
	}
	if kinds["ConnectCluster"] < 1 || kinds["KafkaConnector"] < 2 {
		t.Errorf("samples hold %v; want at least one ConnectCluster and two KafkaConnectors (a source and a sink)", kinds)
	}

	kust, err := os.ReadFile(filepath.Join(dir, "Kustomization"))
	if err != nil {
		t.Fatalf("config/samples needs a Kustomization: %v", err)
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

// validateWithBundledPlugin checks a sample connector's config with the worker's own
// validation of the bundled plugin it names, as the worker would see it (name, class and
// tasks.max come from the dedicated fields).
func validateWithBundledPlugin(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	class, _, _ := unstructured.NestedString(o.Object, "spec", "class")
	cfg, _, err := unstructured.NestedStringMap(o.Object, "spec", "config")
	if err != nil {
		t.Fatalf("%s: spec.config: %v", o.GetName(), err)
	}
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg["name"] = o.GetName()
	cfg["connector.class"] = class
	tasksMax, ok, _ := unstructured.NestedInt64(o.Object, "spec", "tasksMax")
	if !ok {
		tasksMax = int64(v1.DefaultTasksMax)
	}
	cfg["tasks.max"] = strconv.FormatInt(tasksMax, 10)
	// The sample cluster's workers mount an emptyDir at /data (its
	// allowed file path): a folder of this test stands in for it, so the
	// file connectors' checks that a path's folder exists see what a
	// worker sees, whether or not this machine has a /data.
	data := t.TempDir()
	for k, v := range cfg {
		if rest, ok := strings.CutPrefix(v, "/data/"); ok {
			cfg[k] = filepath.Join(data, rest)
		}
	}

	p, ok := bundled.Registry().Lookup(class)
	if !ok {
		t.Errorf("sample %s names class %q, which the worker does not bundle", o.GetName(), class)
		return
	}
	if res := plugin.ValidateConfig(context.Background(), p, cfg); res.ErrorCount != 0 {
		t.Errorf("sample %s: the worker's validation of %s finds %d errors: %+v", o.GetName(), class, res.ErrorCount, res.Errors())
	}
}
