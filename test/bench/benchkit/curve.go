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
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Curve is a cost measured at several sizes: how a figure (seconds, MiB,
// requests per minute) grows with a count (connectors, tasks, triggers).
// A curve is reported as its series, its fitted cost per unit and its bend,
// and drawn as a PNG in OutDir.
type Curve struct {
	// Name is the figure's name, e.g. "operator_ready_s_per_1000".
	Name string
	// X and Y label the axes of the plot, e.g. "KafkaConnectors", "seconds".
	X, Y string
	// Per scales the fitted slope into the figure's unit: 1000 for a
	// figure "per 1000", 1 for "per task".
	Per float64
	// Points are the measurements, in any order.
	Points []Point
}

// Sizes parses a curve's sizes, a comma-separated list of positive counts
// ("250,1000,4000"), given as flag name.
func Sizes(name, list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive count (give counts separated by commas, e.g. 1,100,500)", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Point is one measurement of a curve.
type Point struct{ X, Y float64 }

// Add records a measurement.
func (c *Curve) Add(x, y float64) { c.Points = append(c.Points, Point{x, y}) }

func (c *Curve) sorted() []Point {
	p := append([]Point(nil), c.Points...)
	sort.Slice(p, func(i, j int) bool { return p[i].X < p[j].X })
	return p
}

// Slope is the least-squares slope of Y over X (the cost of one more unit),
// NaN with fewer than two distinct sizes.
func (c *Curve) Slope() float64 {
	n := float64(len(c.Points))
	var sx, sy, sxx, sxy float64
	for _, p := range c.Points {
		sx += p.X
		sy += p.Y
		sxx += p.X * p.X
		sxy += p.X * p.Y
	}
	d := n*sxx - sx*sx
	if n < 2 || d == 0 {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / d
}

// Bend is the slope of the last segment over the slope of the first (sizes
// in order): 1 for a straight line, above 1 for a cost that grows faster
// than linearly. The bound is 1.3. NaN with fewer than three sizes
// or a first segment that does not rise.
func (c *Curve) Bend() float64 {
	p := c.sorted()
	if len(p) < 3 {
		return math.NaN()
	}
	seg := func(a, b Point) float64 { return (b.Y - a.Y) / (b.X - a.X) }
	first, last := seg(p[0], p[1]), seg(p[len(p)-2], p[len(p)-1])
	if first <= 0 {
		return math.NaN()
	}
	return last / first
}

// Report prints the curve (one "conveyor-curve:" line with the series, then
// "conveyor-bench: NAME=slope×Per" and "conveyor-bench: NAME_bend=…") and
// writes NAME.png into OutDir. The plot's error is returned, the lines are
// printed in any case.
func (c *Curve) Report() error {
	var b strings.Builder
	for _, p := range c.sorted() {
		fmt.Fprintf(&b, " %s=%s", strconv.FormatFloat(p.X, 'f', -1, 64), strconv.FormatFloat(p.Y, 'f', 3, 64))
	}
	fmt.Printf("conveyor-curve: %s (%s by %s):%s\n", c.Name, c.Y, c.X, b.String())
	per := c.Per
	if per == 0 {
		per = 1
	}
	Figure(c.Name, c.Slope()*per)
	Figure(c.Name+"_bend", c.Bend())
	return c.plot()
}

// OutDir is the bench's output folder: $CONVEYOR_BENCH_OUT, or bench-out in
// the working folder (ignored by git). It is created when missing.
func OutDir() (string, error) {
	dir := os.Getenv("CONVEYOR_BENCH_OUT")
	if dir == "" {
		dir = "bench-out"
	}
	return dir, os.MkdirAll(dir, 0o755)
}

func (c *Curve) plot() error {
	if len(c.Points) == 0 {
		return errors.New("curve " + c.Name + " has no points")
	}
	dir, err := OutDir()
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = c.Name
	p.X.Label.Text = c.X
	p.Y.Label.Text = c.Y
	pts := make(plotter.XYs, 0, len(c.Points))
	for _, q := range c.sorted() {
		pts = append(pts, plotter.XY{X: q.X, Y: q.Y})
	}
	line, marks, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	p.Add(line, marks, plotter.NewGrid())
	// The fitted line, for the eye to compare with the measurements.
	if s := c.Slope(); !math.IsNaN(s) {
		var mx, my float64
		for _, q := range pts {
			mx += q.X
			my += q.Y
		}
		mx /= float64(len(pts))
		my /= float64(len(pts))
		fit := plotter.NewFunction(func(x float64) float64 { return my + s*(x-mx) })
		fit.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(fit)
		p.Legend.Add("measured", line, marks)
		p.Legend.Add("least-squares fit", fit)
		p.Legend.Top, p.Legend.Left = true, true
	}
	return p.Save(6*vg.Inch, 4*vg.Inch, filepath.Join(dir, c.Name+".png"))
}
