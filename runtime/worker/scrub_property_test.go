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

package worker

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/configprovider"
	"github.com/conveyor-dev/conveyor/test/testkit"
)

// scrubAlphabet makes values that collide with each other, with common
// config text and with JSON's own syntax (quotes, backslashes, commas,
// colons, brackets), and multi-byte runes.
var scrubAlphabet = []string{"a", "b", "c", "e", "o", `"`, `\`, ",", ":", "{", "}", "[", "]", " ", "é", "0"}

func randomValue(rng *rand.Rand) string {
	n := configprovider.MinScrubLength + rng.IntN(7)
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(scrubAlphabet[rng.IntN(len(scrubAlphabet))])
	}
	return b.String()
}

// forms are the ways a value is written in a message (as the scrubber
// looks for it): as is, JSON-escaped, Go-quoted.
func forms(v string) []string {
	j, _ := json.Marshal(v)
	q := strconv.Quote(v)
	return []string{v, string(j[1 : len(j)-1]), q[1 : len(q)-1]}
}

func containsAny(s string, values []string) bool {
	for _, v := range values {
		for _, f := range forms(v) {
			if strings.Contains(s, f) {
				return true
			}
		}
	}
	return false
}

// propConnector is one generated connector: its config as written (with
// ${env:} placeholders) and the values its placeholders resolve to.
type propConnector struct {
	name   string
	config map[string]string
	values []string
}

// TestScrubberPropertyConnectorsKeepTheirOwnData: over random connectors
// whose resolved values collide with each other's literal config text and
// with JSON syntax, a value resolved for one connector never changes
// another connector's config as REST shows it nor its stored task configs,
// every REST body is valid JSON, and no connector's own resolved value
// appears in the REST answers about it. Seeded: a failure prints the seed.
func TestScrubberPropertyConnectorsKeepTheirOwnData(t *testing.T) {
	tw := startTestWorkerWith(t, Options{Config: workerConfig(t, newKafka(t), nil), Resolver: configprovider.Standard(nil)})

	seed := uint64(time.Now().UnixNano())
	if s := testkitSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (set CONVEYOR_PROPERTY_SEED to repeat)", seed)
	const rounds = 4
	for round := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		conns := generateConnectors(t, rng, round)
		for _, c := range conns {
			createConnector(t, tw, c.config)
		}
		for _, c := range conns {
			checkConnectorData(t, tw, c, seed, round)
		}
		for _, path := range []string{"/connectors", "/connectors?expand=info&expand=status", "/"} {
			code, body := doJSON(t, http.MethodGet, tw.url+path, nil)
			if code != http.StatusOK || !json.Valid(body) {
				t.Fatalf("seed %d round %d: GET %s: %d, valid JSON %v: %s", seed, round, path, code, json.Valid(body), body)
			}
		}
		for _, c := range conns {
			// 409 is the worker's "rebalancing, ask again" (the connectors
			// just created are being assigned), as in Kafka Connect.
			testkit.Eventually(t, 30*time.Second, "deleting "+c.name, func() (bool, string) {
				code, body := doJSON(t, http.MethodDelete, tw.url+"/connectors/"+c.name, nil)
				if code != http.StatusNoContent && code != http.StatusConflict {
					t.Fatalf("deleting %s: %d %s", c.name, code, body)
				}
				return code == http.StatusNoContent, fmt.Sprintf("%d %s", code, body)
			})
		}
	}
}

func testkitSeed() uint64 {
	s, _ := strconv.ParseUint(strings.TrimSpace(os.Getenv("CONVEYOR_PROPERTY_SEED")), 10, 64)
	return s
}

func generateConnectors(t *testing.T, rng *rand.Rand, round int) []propConnector {
	t.Helper()
	n := 3 + rng.IntN(3)
	conns := make([]propConnector, n)
	var all []string
	for i := range conns {
		c := &conns[i]
		c.name = fmt.Sprintf("prop-%d-%d", round, i)
		c.config = rangeConnector(c.name, 1+rng.IntN(2))
		c.config["count"] = "50"
		for k := range 2 + rng.IntN(2) {
			v := randomValue(rng)
			env := fmt.Sprintf("CONVEYOR_PROP_%d_%d_%d", round, i, k)
			t.Setenv(env, v)
			c.values = append(c.values, v)
			c.config[fmt.Sprintf("x.secret.%d", k)] = "${env:" + env + "}"
		}
		all = append(all, c.values...)
	}
	for i := range conns {
		c := &conns[i]
		// The fixed keys must not hold the connector's own values (the
		// scrubber hides those in its own answers, as it should).
		for _, v := range c.config {
			if !strings.HasPrefix(v, "${") && containsAny(v, c.values) {
				t.Skipf("generated value collides with a fixed key of %s; rerun", c.name)
			}
		}
		for k := 0; k < 4; k++ {
			var lit string
			for range 20 {
				other := all[rng.IntN(len(all))]
				switch rng.IntN(3) {
				case 0:
					lit = other // exactly another connector's secret
				case 1:
					lit = randomValue(rng) + other + randomValue(rng)
				default:
					lit = other + other
				}
				if !containsAny(lit, c.values) {
					break
				}
				lit = ""
			}
			if lit != "" {
				c.config[fmt.Sprintf("x.literal.%d", k)] = lit
			}
		}
	}
	return conns
}

func checkConnectorData(t *testing.T, tw *testWorker, c propConnector, seed uint64, round int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d round %d connector %s: %s", seed, round, c.name, fmt.Sprintf(format, args...))
	}
	get := func(path string, out any) []byte {
		t.Helper()
		code, body := doJSON(t, http.MethodGet, tw.url+path, nil)
		if code != http.StatusOK {
			fail("GET %s: %d %s", path, code, body)
		}
		if !json.Valid(body) {
			fail("GET %s is not valid JSON: %s", path, body)
		}
		if out != nil {
			if err := json.Unmarshal(body, out); err != nil {
				fail("GET %s: %v", path, err)
			}
		}
		return body
	}
	var tasks []struct {
		Config map[string]string `json:"config"`
	}
	testkit.Eventually(t, 20*time.Second, "task configs of "+c.name, func() (bool, string) {
		body := get("/connectors/"+c.name+"/tasks", &tasks)
		return len(tasks) > 0, string(body)
	})
	var config map[string]string
	get("/connectors/"+c.name+"/config", &config)
	if !maps.Equal(config, c.config) {
		fail("REST config changed:\n got  %q\n want %q", config, c.config)
	}
	stored := tw.configs.TaskConfigs(c.name)
	if len(stored) != len(tasks) {
		fail("%d stored task configs, REST shows %d", len(stored), len(tasks))
	}
	for i, task := range tasks {
		for k, want := range c.config {
			if got, ok := task.Config[k]; ok && got != want {
				fail("REST task %d config %s = %q, want %q", i, k, got, want)
			}
			if got, ok := stored[i][k]; ok && got != want {
				fail("stored task %d config %s = %q, want %q", i, k, got, want)
			}
		}
	}
	for _, path := range []string{"", "/status", "/topics", "/config", "/tasks"} {
		var v any
		get("/connectors/"+c.name+path, &v)
		if s := fmt.Sprint(v); containsAny(s, c.values) {
			fail("GET %s shows one of its own resolved values: %s", path, s)
		}
	}
}
