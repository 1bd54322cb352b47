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

package configprovider

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDistributedRefusesFileAndEnvWithoutAllowList(t *testing.T) {
	secrets := ProviderFunc(func(_ context.Context, path string, keys []string) (map[string]string, error) {
		return map[string]string{keys[0]: "s3cr3t-value"}, nil
	})
	r := Distributed(secrets, Access{})
	for key, v := range map[string]string{
		"a.token": "${file:/var/run/secrets/kubernetes.io/serviceaccount/token}",
		"b.env":   "${env:HOME}",
	} {
		_, err := r.Resolve(context.Background(), map[string]string{key: v})
		var re *RefusedError
		if !errors.As(err, &re) || re.Key != key {
			t.Fatalf("%s=%s: got %v, want a RefusedError naming the key", key, v, err)
		}
		if !strings.Contains(err.Error(), "spec.connectorAccess") {
			t.Errorf("message does not say where to allow it: %v", err)
		}
	}
	got, err := r.Resolve(context.Background(), map[string]string{"p": "${secret:db:pw}"})
	if err != nil || got["p"] != "s3cr3t-value" {
		t.Fatalf("secret provider must stay on: %v %v", got, err)
	}
}

func TestDistributedAllowList(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	os.MkdirAll(allowed, 0o755)
	os.WriteFile(filepath.Join(allowed, "f"), []byte("inside-value\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "outside"), []byte("outside-value"), 0o600)
	os.Symlink(filepath.Join(dir, "outside"), filepath.Join(allowed, "link"))
	t.Setenv("CONVEYOR_TEST_ALLOWED", "env-value")
	t.Setenv("CONVEYOR_TEST_OTHER", "other-value")
	r := Distributed(nil, Access{FilePaths: []string{allowed}, EnvVariables: []string{"CONVEYOR_TEST_ALLOWED"}})

	got, err := r.Resolve(context.Background(), map[string]string{"f": "${file:" + filepath.Join(allowed, "f") + "}", "e": "${env:CONVEYOR_TEST_ALLOWED}"})
	if err != nil || got["f"] != "inside-value" || got["e"] != "env-value" {
		t.Fatalf("allowed: %v %v", got, err)
	}
	for _, v := range []string{
		"${file:" + filepath.Join(dir, "outside") + "}",
		"${file:" + filepath.Join(allowed, "link") + "}",
		"${file:" + allowed + "/../outside}",
		"${file:relative/f}",
		"${env:CONVEYOR_TEST_OTHER}",
	} {
		if _, err := r.Resolve(context.Background(), map[string]string{"k": v}); err == nil {
			t.Errorf("%s was resolved", v)
		} else if strings.Contains(err.Error(), "outside-value") || strings.Contains(err.Error(), "other-value") {
			t.Errorf("error shows the value: %v", err)
		}
	}
	// Standalone keeps today's behaviour.
	if got, err := Standard(nil).Resolve(context.Background(), map[string]string{"e": "${env:CONVEYOR_TEST_OTHER}"}); err != nil || got["e"] != "other-value" {
		t.Fatalf("standalone: %v %v", got, err)
	}
}

func TestScrubHidesEveryResolvedValue(t *testing.T) {
	vals := map[string]string{"pw": "hunter2-marker", "topic": `t"quoted\marker`}
	r := Distributed(ProviderFunc(func(_ context.Context, _ string, keys []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range keys {
			out[k] = vals[k]
		}
		return out, nil
	}), Access{})
	if _, err := r.Resolve(context.Background(), map[string]string{"a": "${secret:s:pw}", "b": "x-${secret:s:topic}"}); err != nil {
		t.Fatal(err)
	}
	msg := `Invalid value hunter2-marker for configuration errors.retry.timeout; json "t\"quoted\\marker"; plain t"quoted\marker`
	got := r.Scrub(msg)
	if strings.Contains(got, "marker") {
		t.Fatalf("scrubbed message still holds a value: %s", got)
	}
	if !strings.Contains(got, "Invalid value ${secret:s:pw} for configuration errors.retry.timeout") {
		t.Fatalf("the placeholder should replace the value: %s", got)
	}
	var buf bytes.Buffer
	log := slog.New(ScrubHandler(slog.NewJSONHandler(&buf, nil), r.Scrub))
	log.Info("task failed hunter2-marker", "err", errors.New("topic t\"quoted\\marker missing"), "trace", "hunter2-marker", slog.Group("g", "v", "hunter2-marker"))
	if strings.Contains(buf.String(), "marker") {
		t.Fatalf("log holds a value: %s", buf.String())
	}
}
