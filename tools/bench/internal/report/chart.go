package report

import (
	"fmt"
	"image/color"
	"math"

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
// PNG at path.
func Chart(r *Run, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("POST /plants: latency against throughput (open loop, medians of %d round(s))", len(r.Rounds))
	p.X.Label.Text = "requests per second"
	p.Y.Label.Text = "latency, ms (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true

	points := 0
	for _, v := range Variants {
		for _, q := range []struct {
			name string
			pick func(Latency) float64
			dash []vg.Length
		}{{"p99", P99Of, nil}, {"p50", P50Of, []vg.Length{vg.Points(5), vg.Points(3)}}} {
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
			line, scatter, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			line.Color = colors[v]
			line.Width = vg.Points(1.5)
			line.Dashes = q.dash
			scatter.Color = colors[v]
			scatter.Shape = draw.CircleGlyph{}
			p.Add(line, scatter)
			p.Legend.Add(v+" "+q.name, line, scatter)
		}
	}
	if points == 0 {
		return fmt.Errorf("chart: no open-loop figure to plot")
	}
	// Some room above and below the data on the log axis.
	p.Y.Min /= 1.5
	p.Y.Max *= 2.5
	p.X.Min = 0
	p.X.Max *= 1.05
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}
