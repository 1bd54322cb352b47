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

package rest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// staticKeys is a session key as the config topic would hold it.
func staticKeys(key string) SessionKeys {
	return func() ([]byte, [][]byte, bool) { return []byte(key), [][]byte{[]byte(key)}, true }
}

// A worker of another cluster holds a valid REST token for the leader (the
// attacker's own worker shares it, or it was forwarded to it) but not the
// session key: everything that claims to come from a member is refused,
// and only a request signed with the cluster's key gets through.
func TestForwardedRequestsNeedTheSessionKey(t *testing.T) {
	const key = "cluster-a-session-key-0123456789"
	leader := &taskHerder{memHerder: newMemHerder().seed(), got: map[string][]map[string]string{}}
	leaderTS, _ := newTestServer(t, leader, Config{Token: testToken, SessionKeys: staticKeys(key)})
	follower := newMemHerder().seed()
	follower.leader, follower.leaderURL = false, leaderTS.URL
	followerTS, _ := newTestServer(t, follower, Config{Token: testToken, SessionKeys: staticKeys(key)})
	ctx := context.Background()
	cfgs := []map[string]string{{"task.n": "0"}}

	// Forged: no signature, another cluster's key, a signature replayed on
	// another path, a stale signature.
	if err := SendTaskConfigs(ctx, http.DefaultClient, nil, leaderTS.URL, testToken, "sink-a", cfgs); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("unsigned task configs: %v, want 403", err)
	}
	if err := SendTaskConfigs(ctx, http.DefaultClient, staticKeys("cluster-b-session-key-0123456789"), leaderTS.URL, testToken, "sink-a", cfgs); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("task configs signed with another key: %v, want 403", err)
	}
	body := `{"connector.class":"` + fakeSinkClass + `","topics":"t"}`
	signed, _ := http.NewRequest("PUT", leaderTS.URL+"/connectors/sink-a/config?forward=false", strings.NewReader(body))
	signRequest(signed, []byte(body), []byte(key), time.Now())
	replay, _ := http.NewRequest("PUT", leaderTS.URL+"/connectors/sink-b/config?forward=false", strings.NewReader(body))
	replay.Header = signed.Header.Clone()
	replay.Header.Set("Authorization", "Bearer "+testToken)
	if resp, b := sendRaw(t, replay); resp.StatusCode != 403 || !strings.Contains(string(b), "does not match") {
		t.Fatalf("signature replayed on another connector: %d %s, want 403", resp.StatusCode, b)
	}
	stale, _ := http.NewRequest("PUT", leaderTS.URL+"/connectors/sink-a/config?forward=false", strings.NewReader(body))
	signRequest(stale, []byte(body), []byte(key), time.Now().Add(-2*MaxSignatureAge))
	stale.Header.Set("Authorization", "Bearer "+testToken)
	if resp, b := sendRaw(t, stale); resp.StatusCode != 403 {
		t.Fatalf("stale signature: %d %s, want 403", resp.StatusCode, b)
	}
	if len(leader.got) != 0 {
		t.Fatalf("the leader took forged task configs: %v", leader.got)
	}

	// A client (token only) may not write task configs at all.
	if resp, b := do(t, followerTS, req("PUT", "/connectors/sink-a/tasks", `[{"task.n":"7"}]`, 403)); resp.StatusCode != 403 || len(leader.got) != 0 {
		t.Fatalf("a client's PUT tasks: %d %s, leader got %v", resp.StatusCode, b, leader.got)
	}

	// Genuine: signed by a member, and a client's write forwarded by the
	// follower (which signs it).
	if err := SendTaskConfigs(ctx, http.DefaultClient, staticKeys(key), leaderTS.URL, testToken, "sink-a", cfgs); err != nil {
		t.Fatalf("signed task configs: %v", err)
	}
	if leader.got["sink-a"][0]["task.n"] != "0" {
		t.Fatalf("leader got %v", leader.got)
	}
	if resp, b := do(t, followerTS, req("PUT", "/connectors/sink-a/config", body, 200)); resp.StatusCode != 200 {
		t.Fatalf("a client's config write forwarded by the follower: %d %s", resp.StatusCode, b)
	}
}

func sendRaw(t *testing.T, r *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}
