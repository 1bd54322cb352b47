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

package benchkit

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCurveSlopeAndBend(t *testing.T) {
	line := Curve{Name: "line", Points: []Point{{250, 1}, {4000, 16}, {1000, 4}}}
	if s := line.Slope(); math.Abs(s-0.004) > 1e-12 {
		t.Fatalf("slope of y = x/250 is %v, want 0.004", s)
	}
	if b := line.Bend(); math.Abs(b-1) > 1e-12 {
		t.Fatalf("bend of a straight line is %v, want 1", b)
	}
	square := Curve{Points: []Point{{1, 1}, {2, 4}, {4, 16}}}
	// First segment 3 per unit, last 6: a bend of 2.
	if b := square.Bend(); math.Abs(b-2) > 1e-12 {
		t.Fatalf("bend of y = x² over 1,2,4 is %v, want 2", b)
	}
	if b := (&Curve{Points: []Point{{1, 1}, {2, 2}}}).Bend(); !math.IsNaN(b) {
		t.Fatalf("bend of two points is %v, want NaN", b)
	}
}

func TestCurveReportWritesAPNG(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CONVEYOR_BENCH_OUT", dir)
	c := Curve{Name: "worker_rss_mb_per_task", X: "tasks", Y: "MiB", Points: []Point{{10, 30}, {100, 48}, {400, 130}}}
	if err := c.Report(); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "worker_rss_mb_per_task.png"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%d bytes written, not a PNG", len(png))
	}
}

func TestSizesParsesCountsAndNamesTheBadOne(t *testing.T) {
	got, err := Sizes("-sizes", "250, 1000,4000")
	if err != nil || len(got) != 3 || got[0] != 250 || got[1] != 1000 || got[2] != 4000 {
		t.Fatalf("Sizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "1,0", "1,x"} {
		if _, err := Sizes("-sizes", bad); err == nil || !strings.Contains(err.Error(), "-sizes") {
			t.Errorf("Sizes(%q) error = %v, want one naming -sizes", bad, err)
		}
	}
}
