package main

import (
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// testDump is a dump as prom-check writes it: a latency panel (seconds)
// with two lines and the given exemplars, and a stat panel.
func testDump(exemplars ...Exemplar) Dump {
	start := time.Unix(1700000000, 0)
	line := func(legend string, v float64) Series {
		s := Series{Legend: legend}
		for t := 0.0; t <= 600; t += 5 {
			s.Points = append(s.Points, [2]float64{1700000000 + t, v})
		}
		return s
	}
	avail := 0.998
	return Dump{Start: start, End: start.Add(10 * time.Minute), Panels: []Panel{
		{Title: "Availability", Type: "stat", Unit: "percentunit", Stat: &avail},
		{Title: "Request latency p99", Type: "timeseries", Unit: "s",
			Series:    []Series{line("GET /plants", 0.010), line("POST /plants", 0.020)},
			Exemplars: exemplars},
	}}
}

var (
	low  = Exemplar{Time: 1700000100, Value: 0.012, TraceID: "t1"} // among the lines
	high = Exemplar{Time: 1700000400, Value: 0.250, TraceID: "t2"} // far above them: the y-axis must grow
)

func writeDump(t *testing.T, d Dump) string {
	t.Helper()
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "panels.json")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// dotPixels counts the pixels of the exemplars' colour: only the dots and
// their legend entry have it.
func dotPixels(img image.Image) int {
	wr, wg, wb, wa := exemplarColor.RGBA()
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, b, a := img.At(x, y).RGBA(); r == wr && g == wg && b == wb && a == wa {
				n++
			}
		}
	}
	return n
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "dashboard.png")
	if err := run(writeDump(t, testDump(low, high)), out, "1700000200,1700000300", "title"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// 16 inches at vgimg's 96 dpi; one row of time series under the stats.
	if b := img.Bounds(); b.Dx() != 16*96 || b.Dy() < 400 || b.Dy() > 800 {
		t.Errorf("image is %v, want 1536 wide and 400 to 800 high", b)
	}
	if n := dotPixels(img); n == 0 {
		t.Error("no exemplar drawn")
	}

	if err := run(writeDump(t, Dump{Start: time.Unix(1700000000, 0), End: time.Unix(1700000600, 0)}), filepath.Join(dir, "empty.png"), "", "title"); err == nil {
		t.Error("a dump without panels: no error")
	}
}

// TestExemplarDots: each exemplar in the range is a dot, also one above
// the lines (the y-axis grows for it); none, no legend entry either.
func TestExemplarDots(t *testing.T) {
	draws := func(exemplars ...Exemplar) int {
		t.Helper()
		d := testDump(exemplars...)
		pl, err := panelPlot(d.Panels[1], d, [2]float64{})
		if err != nil {
			t.Fatal(err)
		}
		c := vgimg.New(8*vg.Inch, 4*vg.Inch)
		dc := draw.New(c)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		pl.Draw(dc)
		return dotPixels(c.Image())
	}
	outside := Exemplar{Time: 1700000900, Value: 0.015, TraceID: "late"}
	if n := draws(); n != 0 {
		t.Errorf("no exemplar: %d pixels of their colour, want 0", n)
	}
	if n := draws(outside); n != 0 {
		t.Errorf("an exemplar after the range: %d pixels of their colour, want 0", n)
	}
	one := draws(low) // its dot and the legend's
	if one == 0 {
		t.Fatal("one exemplar: not drawn")
	}
	if n := draws(high); n < one*3/4 || n > one*5/4 {
		t.Errorf("the exemplar above the lines: %d pixels, want about %d as for one among them", n, one)
	}
	if n := draws(low, high, outside); n < one*5/4 {
		t.Errorf("two exemplars: %d pixels, want about %d (three dots, with the legend's, where one had two)", n, one*3/2)
	}
}
