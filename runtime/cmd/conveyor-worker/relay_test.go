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

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	relayTestSecret = "s3cr3t-in-a-panic"
	relayTestKey    = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n"
)

// A child that learns two values, logs one, and dies of a panic in a
// goroutine of its own whose value quotes both (the report Go prints for
// an unrecovered panic, which no recover of the runtime can catch).
func init() {
	if os.Getenv("CONVEYOR_RELAY_TEST_CHILD") != "1" {
		return
	}
	announce := announceHidden(os.Stderr)
	fmt.Println("worker starting")
	announce(relayTestSecret, "${secret:db:password}")
	announce(relayTestKey, "[hidden: ssl.key.location]")
	fmt.Fprintf(os.Stderr, "level=INFO msg=\"connecting\" url=postgres://app:%s@db\n", relayTestSecret)
	go func() { panic(fmt.Sprintf("connecting with %s failed; key:\n%s", relayTestSecret, relayTestKey)) }()
	select {}
}

func TestRelayScrubsAPanicInAnyGoroutine(t *testing.T) {
	termLog := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(termLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CONVEYOR_RELAY_TEST_CHILD=1")
	var out bytes.Buffer
	code := relay(cmd, &out, termLog)
	if code != 2 {
		t.Fatalf("exit code %d, want 2 (Go's for a panic); output:\n%s", code, out.String())
	}
	term, err := os.ReadFile(termLog)
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"output": out.String(), "termination message": string(term)} {
		for _, secret := range []string{relayTestSecret, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj", relayMarker} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q:\n%s", what, secret, text)
			}
		}
		for _, want := range []string{"panic: connecting with ${secret:db:password} failed", "[hidden: ssl.key.location]", "goroutine "} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, text)
			}
		}
	}
	if !strings.Contains(out.String(), "worker starting") || !strings.Contains(out.String(), "url=postgres://app:${secret:db:password}@db") {
		t.Errorf("output lost lines or was not scrubbed:\n%s", out.String())
	}
}
