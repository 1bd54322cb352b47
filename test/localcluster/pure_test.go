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

package localcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "POD_IP": "127.0.0.5"}
	for in, want := range map[string]string{
		"plain":                "plain",
		"$(A)":                 "1",
		"--listen=$(POD_IP):8": "--listen=127.0.0.5:8",
		"$(MISSING)":           "$(MISSING)",
		"$$(A)":                "$(A)",
		"cost $5":              "cost $5",
		"$(A":                  "$(A",
		"$(A)$(A)":             "11",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	base := 10 * time.Second
	for crashes, want := range map[int]time.Duration{1: 0, 2: 10 * time.Second, 3: 20 * time.Second, 4: 40 * time.Second, 20: 5 * time.Minute} {
		if got := backoff(base, crashes); got != want {
			t.Errorf("backoff(%d) = %s, want %s", crashes, got, want)
		}
	}
}

func TestImageFolder(t *testing.T) {
	k := &kubelet{kubeletConfig: kubeletConfig{
		images: map[string]string{
			"ghcr.io/conveyor-dev/conveyor": "/bin/conveyor",
			"ghcr.io/conveyor-dev":          "/bin/other",
		},
		entrypoints: map[string][]string{"ghcr.io/conveyor-dev/conveyor": {"/usr/local/bin/conveyor"}},
	}}
	for image, want := range map[string]string{
		"ghcr.io/conveyor-dev/conveyor:v1":       "/bin/conveyor",
		"ghcr.io/conveyor-dev/conveyor@sha256:x": "/bin/conveyor",
		"ghcr.io/conveyor-dev/conveyor":          "/bin/conveyor",
		"ghcr.io/conveyor-dev/conveyor-x:v1":     "",
		"ghcr.io/conveyor-dev:v1":                "/bin/other",
		"nginx":                                  "",
	} {
		got, entry, ok := k.imageFolder(image)
		if got != want || ok != (want != "") {
			t.Errorf("imageFolder(%q) = %q %v, want %q", image, got, ok, want)
		}
		if want == "/bin/conveyor" && (len(entry) != 1 || entry[0] != "/usr/local/bin/conveyor") {
			t.Errorf("imageFolder(%q) entrypoint %v", image, entry)
		}
	}
}

func TestResourceValue(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("1500m")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}}}}
	for _, tc := range []struct {
		res, div, want string
	}{
		{"limits.memory", "1Mi", "64"},
		{"limits.memory", "", "67108864"},
		{"limits.cpu", "", "2"},
		{"limits.cpu", "1m", "1500"},
		{"requests.cpu", "1m", "250"},
	} {
		ref := &corev1.ResourceFieldSelector{ContainerName: "c", Resource: tc.res}
		if tc.div != "" {
			ref.Divisor = resource.MustParse(tc.div)
		}
		got, err := resourceValue(pod, ref)
		if err != nil || got != tc.want {
			t.Errorf("resourceValue(%s, %s) = %q %v, want %q", tc.res, tc.div, got, err, tc.want)
		}
	}
}
