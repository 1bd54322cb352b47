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

package elasticsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/test/testkit"
	"github.com/conveyor-dev/conveyor/test/testkit/servers/estest"
)

// searchIDs asks a server's _search for every document id of an index.
func searchIDs(ctx context.Context, base, user, password, index string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/"+index+"/_search",
		strings.NewReader(`{"query":{"match_all":{}},"size":10000}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(user, password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Hits struct {
			Hits []struct {
				ID     string          `json:"_id"`
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("_search: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	var ids []string
	for _, h := range out.Hits.Hits {
		ids = append(ids, h.ID)
	}
	sort.Strings(ids)
	return ids, nil
}

// The real-server smoke test, happy path only: through the runner into
// ZincSearch v0.4.10 (hack/zincsearch.sh builds it) with Basic
// authentication, 200 documents indexed, then every fifth deleted by a
// tombstone (deletes name their _index, which ZincSearch needs); its search
// then finds exactly the others (polled: it indexes with a delay). Validate
// reaches it (ZincSearch serves GET /es/ without authentication, so a
// wrong password is tested on the stand-in). ZincSearch never reports a
// per-item error; the stand-in tests cover those.
func TestZincSearchSmoke(t *testing.T) {
	ctx := context.Background()
	z, err := estest.StartZinc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	e := newEnv(t, 2)
	cfg := e.config(KeyURL, z.URL, KeyUsername, z.User, KeyPassword, z.Password, KeyIndexFormat, "smoke-${topic}")

	if errs := plugin.ValidateConfig(ctx, Plugin(), cfg).Errors(); len(errs) > 0 {
		t.Fatalf("validating against ZincSearch: %v", errs)
	}
	var recs []*kgo.Record
	for k := range 200 {
		recs = append(recs, rec(strconv.Itoa(k), doc(k, 1)))
	}
	e.produce(t, recs...)
	e.startSink(t, cfg, false)
	e.waitCommitted(t, 30*time.Second)
	want := func(skip func(int) bool) []string {
		var ids []string
		for k := range 200 {
			if skip == nil || !skip(k) {
				ids = append(ids, strconv.Itoa(k))
			}
		}
		sort.Strings(ids)
		return ids
	}
	poll := func(what string, ids []string) {
		t.Helper()
		testkit.Eventually(t, 30*time.Second, what, func() (bool, string) {
			got, err := searchIDs(ctx, z.URL, z.User, z.Password, "smoke-orders")
			if err != nil {
				return false, err.Error()
			}
			return strings.Join(got, ",") == strings.Join(ids, ","), fmt.Sprintf("%d documents found, want %d", len(got), len(ids))
		})
	}
	poll("ZincSearch to find the 200 documents", want(nil))

	var tombs []*kgo.Record
	for k := 0; k < 200; k += 5 {
		tombs = append(tombs, rec(strconv.Itoa(k), nil))
	}
	e.produce(t, tombs...)
	e.waitCommitted(t, 30*time.Second)
	poll("ZincSearch to find the 160 documents left", want(func(k int) bool { return k%5 == 0 }))
}
