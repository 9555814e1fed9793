package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var colors = map[string]color.Color{
	Service:    color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	AllSampled: color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	Floor:      color.RGBA{R: 0x44, G: 0x44, B: 0x44, A: 0xff},
}

// Chart draws latency (p50 dashed, p99 solid; log scale) against the
// open-loop throughput, medians over the rounds, for every variant, into a
// PNG at path; and beside it, when the run has a sweep, the creates'
// closed-loop throughput against the number of connections, service and
// floor.
func Chart(r *Run, path string) error {
	lat, err := latencyPlot(r)
	if err != nil {
		return err
	}
	row := []*plot.Plot{lat}
	w := 9 * vg.Inch
	if r.HasSweep() {
		row = append(row, concurrencyPlot(r))
		w += 6 * vg.Inch
	}
	return writeRow(path, row, w)
}

// writeRow draws plots side by side, width w in all, into a PNG at path.
func writeRow(path string, row []*plot.Plot, w vg.Length) error {
	c, err := draw.NewFormattedCanvas(w, 5.5*vg.Inch, "png")
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Inch / 4, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{row}, tiles, draw.New(c))
	for i, p := range row {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("chart: %w", err)
	}
	return f.Close()
}

// newPlot is a plot with a grid and the legend at the top left.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	return p
}

// addLine adds xys to p as a line (dashed by dash) through circles in c,
// named name in the legend.
func addLine(p *plot.Plot, name string, c color.Color, dash []vg.Length, xys plotter.XYs) error {
	line, scatter, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color, line.Width, line.Dashes = c, vg.Points(1.5), dash
	scatter.Color, scatter.Shape = c, draw.CircleGlyph{}
	p.Add(line, scatter)
	p.Legend.Add(name, line, scatter)
	return nil
}

// dashed is the dashes of a line drawn beside a solid one of the same colour.
var dashed = []vg.Length{vg.Points(5), vg.Points(3)}

// latencyPlot is latency against open-loop throughput.
func latencyPlot(r *Run) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("POST /plants: latency against throughput (open loop, medians of %d round(s))", len(r.Rounds)),
		"requests per second", "latency, ms (log scale)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	points := 0
	for _, v := range Variants {
		for _, q := range []struct {
			name string
			pick func(Latency) float64
			dash []vg.Length
		}{{"p99", P99Of, nil}, {"p50", P50Of, dashed}} {
			var xys plotter.XYs
			for i := range r.Fractions {
				x := r.Figure(v, OpenAt(i, AchievedOf)).Median
				y := r.Figure(v, OpenAt(i, q.pick)).Median
				if math.IsNaN(x) || math.IsNaN(y) || y <= 0 {
					continue
				}
				xys = append(xys, plotter.XY{X: x, Y: y})
			}
			if len(xys) == 0 {
				continue
			}
			points += len(xys)
			if err := addLine(p, v+" "+q.name, colors[v], q.dash, xys); err != nil {
				return nil, err
			}
		}
	}
	if points == 0 {
		return nil, fmt.Errorf("chart: no open-loop figure to plot")
	}
	// Some room above and below the data on the log axis.
	p.Y.Min /= 1.5
	p.Y.Max *= 2.5
	p.X.Min = 0
	p.X.Max *= 1.05
	return p, nil
}

// concurrencyPlot is the creates' closed-loop throughput (medians, and the
// range over the rounds as error bars) against the number of connections,
// service and floor, each line's label with the ratios to the floor.
func concurrencyPlot(r *Run) *plot.Plot {
	p := newPlot("POST /plants: closed-loop throughput by connections", "connections (log scale)", "requests per second")
	p.X.Scale = plot.LogScale{}
	levels := r.ConcurrencyLevels()
	ticks := make([]plot.Tick, len(levels))
	for i, c := range levels {
		ticks[i] = plot.Tick{Value: float64(c), Label: fmt.Sprint(c)}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	for _, v := range RouteVariants {
		var xys plotter.XYs
		var errs plotter.YErrors
		var ratios []string
		for _, c := range levels {
			peak := r.CreatesAt(c, ClosedPeakOf)
			s := r.Figure(v, peak)
			if !s.Valid() {
				continue
			}
			xys = append(xys, plotter.XY{X: float64(c), Y: s.Median})
			errs = append(errs, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
			ratios = append(ratios, num(r.RatioToFloor(v, peak).Median, 2))
		}
		if len(xys) == 0 {
			continue
		}
		label := v
		if v != Floor {
			label += " (÷ floor " + strings.Join(ratios, ", ") + ")"
		}
		if addLine(p, label, colors[v], nil, xys) != nil {
			continue
		}
		if bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{xys, errs}); err == nil {
			bars.Color = colors[v]
			p.Add(bars)
		}
	}
	p.Y.Min = 0
	p.Y.Max *= 1.25
	p.X.Min = float64(levels[0]) / 1.5
	p.X.Max = float64(levels[len(levels)-1]) * 1.5
	return p
}
