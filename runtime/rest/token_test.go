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
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestFileTokenRotation(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	if err := os.WriteFile(p, []byte("  old-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tc, err := FileToken(p, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tc.now = func() time.Time { return now }
	if !tc.Accepts("Bearer old-token") {
		t.Fatal("surrounding whitespace of the file must be ignored")
	}
	// Kubernetes swaps a symbolic link; a rename gives the same new inode.
	tmp := filepath.Join(dir, "new")
	os.WriteFile(tmp, []byte("new-token\n"), 0o600)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if !tc.Accepts("Bearer old-token") {
		t.Fatal("the file is looked at again only after the recheck interval")
	}
	now = now.Add(time.Second)
	if tc.Accepts("Bearer old-token") || !tc.Accepts("Bearer new-token") {
		t.Fatal("after the recheck interval the new token is the only one accepted")
	}
	// An empty file (a Secret being rewritten) keeps the last good token.
	os.WriteFile(p, []byte("\n"), 0o600)
	now = now.Add(2 * time.Second)
	if !tc.Accepts("Bearer new-token") {
		t.Fatal("an empty token file must not turn authentication off or lock everyone out")
	}
	if tc.Accepts("Bearer ") || tc.Accepts("") {
		t.Fatal("an empty bearer is accepted")
	}
}

func TestMetricsServerNeedsToken(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics-token")
	os.WriteFile(p, []byte("scrape-token"), 0o600)
	auth, err := FileToken(p, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "kafka_connect_test_gauge", Help: "x"}))
	ts := httptest.NewServer(NewMetricsServer(reg, auth, nil, nil, nil).Handler)
	defer ts.Close()
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer wrong", 401}, {"Basic scrape-token", 401}, {"Bearer scrape-token", 200}} {
		req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Authorization %q: status %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
	resp, err := http.Get(ts.URL + "/connectors")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 && resp.StatusCode != 404 {
		t.Errorf("the metrics port serves more than /metrics: %d", resp.StatusCode)
	}
}
