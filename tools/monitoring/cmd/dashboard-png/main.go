// Command dashboard-png draws the main panels of plantstore's Grafana
// dashboard from the series prom-check -dump took from a real Prometheus,
// into one PNG: what the dashboard shows, where no Grafana can run (see
// docs/validation.md). Stat panels show their value, time series panels
// their lines with the target's legend, and the exemplars prom-check dumped
// as dots over them (each carries the trace_id Grafana links to Jaeger); an
// outage window, if given, is shaded in every time series panel.
//
//	dashboard-png -in panels.json -out docs/dashboard-on-cluster.png [-outage START,END] [-title TEXT]
//
// It is a module of its own (gonum.org/v1/plot, as tools/bench draws its
// charts) so that the tools module needs no plotting library.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Dump mirrors prom-check's -dump output.
type Dump struct {
	Start, End time.Time
	Panels     []Panel
}

// Panel is one panel of the dump.
type Panel struct {
	Title     string
	Type      string
	Unit      string
	Stat      *float64
	Series    []Series
	Exemplars []Exemplar
}

// Series is one line of a panel.
type Series struct {
	Legend string
	Points [][2]float64 // Unix seconds, value
}

// Exemplar is one exemplar of a panel: a dot that, in Grafana, links to
// its trace in Jaeger.
type Exemplar struct {
	Time    float64 // Unix seconds
	Value   float64
	TraceID string
}

// exemplarColor is in none of plotutil's line colours, nor a grey of the
// text, so that the dots stand out.
var exemplarColor = color.NRGBA{R: 0x4b, G: 0x00, B: 0x82, A: 0xff}

func main() {
	in := flag.String("in", "", "prom-check -dump output")
	out := flag.String("out", "", "PNG to write")
	outage := flag.String("outage", "", "START,END (Unix seconds) of an outage to shade")
	title := flag.String("title", "plantstore dashboard, main panels, from a real Prometheus", "heading of the image")
	flag.Parse()
	if *in == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "dashboard-png: -in and -out are required")
		os.Exit(2)
	}
	if err := run(*in, *out, *outage, *title); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard-png:", err)
		os.Exit(1)
	}
}

func run(in, out, outage, title string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var d Dump
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(d.Panels) == 0 {
		return fmt.Errorf("%s: no panel", in)
	}
	var shade [2]float64
	if outage != "" {
		parts := strings.Split(outage, ",")
		if len(parts) != 2 {
			return fmt.Errorf("-outage %q: want START,END", outage)
		}
		for i, p := range parts {
			if shade[i], err = strconv.ParseFloat(p, 64); err != nil {
				return fmt.Errorf("-outage: %w", err)
			}
		}
	}

	var stats, series []Panel
	for _, p := range d.Panels {
		if p.Type == "stat" {
			stats = append(stats, p)
		} else {
			series = append(series, p)
		}
	}
	const cols = 2
	rows := (len(series) + cols - 1) / cols
	width, rowHeight, statHeight, head := 16*vg.Inch, 3.6*vg.Inch, 1.6*vg.Inch, 0.5*vg.Inch
	if len(stats) == 0 {
		statHeight = 0
	}
	img := vgimg.New(width, vg.Length(rows)*rowHeight+statHeight+head)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())

	heading := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 15), XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	sub := fmt.Sprintf("%s  ·  %s – %s UTC", title, d.Start.UTC().Format("2006-01-02 15:04:05"), d.End.UTC().Format("15:04:05"))
	if shade[1] > 0 {
		sub += "  ·  shaded: Redis scaled to 0"
	}
	dc.FillText(heading, vg.Point{X: width / 2, Y: dc.Max.Y - 0.12*vg.Inch}, sub)

	pad := draw.Tiles{PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	top := dc.Max.Y - head
	if len(stats) > 0 {
		area := draw.Canvas{Canvas: img, Rectangle: vg.Rectangle{Min: vg.Point{X: dc.Min.X, Y: top - statHeight}, Max: vg.Point{X: dc.Max.X, Y: top}}}
		if err := drawTiles(area, pad, stats, len(stats), d, shade); err != nil {
			return err
		}
		top -= statHeight
	}
	area := draw.Canvas{Canvas: img, Rectangle: vg.Rectangle{Min: dc.Min, Max: vg.Point{X: dc.Max.X, Y: top}}}
	if err := drawTiles(area, pad, series, cols, d, shade); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drawTiles draws the panels into area, cols to a row.
func drawTiles(area draw.Canvas, tiles draw.Tiles, panels []Panel, cols int, d Dump, shade [2]float64) error {
	tiles.Rows, tiles.Cols = (len(panels)+cols-1)/cols, cols
	for i, p := range panels {
		pl, err := panelPlot(p, d, shade)
		if err != nil {
			return fmt.Errorf("panel %q: %w", p.Title, err)
		}
		pl.Draw(tiles.At(area, i%cols, i/cols))
	}
	return nil
}

// scale converts a value of the unit to what the axis shows.
func scale(unit string) (float64, string) {
	switch unit {
	case "percentunit":
		return 100, "%"
	case "s":
		return 1000, "ms"
	case "reqps":
		return 1, "requests/s"
	case "ops":
		return 1, "operations/s"
	}
	return 1, unit
}

func panelPlot(p Panel, d Dump, shade [2]float64) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.Title.TextStyle.Font.Size = 13
	factor, unit := scale(p.Unit)
	if p.Type == "stat" {
		pl.HideAxes()
		text := "no data"
		if p.Stat != nil {
			v := *p.Stat * factor
			text = strconv.FormatFloat(v, 'f', 3, 64) + " " + unit
			if unit == "%" {
				text = strconv.FormatFloat(v, 'f', 3, 64) + "%"
			}
		}
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0.5, Y: 0.5}}, Labels: []string{text}})
		if err != nil {
			return nil, err
		}
		labels.TextStyle[0].Font.Size = 40
		labels.TextStyle[0].XAlign = draw.XCenter
		labels.TextStyle[0].YAlign = draw.YCenter
		pl.Add(labels)
		pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = 0, 1, 0, 1
		return pl, nil
	}
	pl.Y.Label.Text = unit
	pl.X.Tick.Marker = plot.TimeTicks{Format: "15:04:05", Time: func(t float64) time.Time { return time.Unix(int64(t), 0).UTC() }}
	pl.Add(plotter.NewGrid())
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.Legend.TextStyle.Font.Size = 9
	start, end := float64(d.Start.Unix()), float64(d.End.Unix())
	// The exemplars in the range, scaled as the lines are.
	var dots plotter.XYs
	for _, e := range p.Exemplars {
		if v := e.Value * factor; e.Time >= start && e.Time <= end && !math.IsNaN(v) && !math.IsInf(v, 0) {
			dots = append(dots, plotter.XY{X: e.Time, Y: v})
		}
	}
	// Each line's points, scaled; NaN and Inf have no place on the axis.
	lines := make([]plotter.XYs, len(p.Series))
	maxY := 0.0
	for i, s := range p.Series {
		for _, pt := range s.Points {
			if v := pt[1] * factor; !math.IsNaN(v) && !math.IsInf(v, 0) {
				lines[i] = append(lines[i], plotter.XY{X: pt[0], Y: v})
				maxY = math.Max(maxY, v)
			}
		}
	}
	for _, xy := range dots { // a dot above the top would not be drawn
		maxY = math.Max(maxY, xy.Y)
	}
	top := 1.0
	if maxY > 0 {
		top = maxY * 1.4 // room for the legend
	}
	if shade[1] > shade[0] {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: shade[0], Y: 0}, {X: shade[1], Y: 0}, {X: shade[1], Y: top}, {X: shade[0], Y: top}})
		if err != nil {
			return nil, err
		}
		poly.Color = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0x30}
		poly.LineStyle.Width = 0
		poly.LineStyle.Color = poly.Color
		pl.Add(poly)
	}
	for i, xys := range lines {
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		line.Width = vg.Points(1.3)
		pl.Add(line)
		pl.Legend.Add(p.Series[i].Legend, line)
	}
	if len(dots) > 0 { // added last: drawn over the lines
		sc, err := plotter.NewScatter(dots)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: exemplarColor, Shape: draw.CircleGlyph{}, Radius: vg.Points(2.5)}
		pl.Add(sc)
		pl.Legend.Add("exemplars (trace_id → Jaeger)", sc)
	}
	pl.X.Min, pl.X.Max = start, end
	pl.Y.Min, pl.Y.Max = 0, top
	return pl, nil
}
