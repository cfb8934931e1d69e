package slack

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// RangeQuerier is the part of the Prometheus HTTP API a chart needs; v1.API implements it.
type RangeQuerier interface {
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, error)
}

// maxLinesPerSeries bounds the lines one query may draw (a query without aggregation can return
// one series per pod).
const maxLinesPerSeries = 6

// chartLine is one line of a panel.
type chartLine struct {
	label  string
	points plotter.XYs
}

// chartPanel is the lines of one chart series (one query), drawn in their own panel so that
// series with different units never share an axis.
type chartPanel struct {
	title string
	unit  string
	lines []chartLine
}

// lineColors avoids red, which marks the alert's start.
var lineColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255},
	color.RGBA{R: 140, G: 86, B: 75, A: 255}, color.RGBA{R: 127, G: 127, B: 127, A: 255},
}

// chartSteps is how many points a chart asks Prometheus for.
const chartSteps = 240

// fetchChart runs the chart's range queries for [end-Range, end].
func fetchChart(ctx context.Context, q RangeQuerier, spec playbooks.ChartSpec, end time.Time) ([]chartPanel, error) {
	rng := cmp.Or(spec.Range, time.Hour)
	r := v1.Range{Start: end.Add(-rng), End: end, Step: max(rng/chartSteps, time.Second)}
	var panels []chartPanel
	var errs []error
	for _, s := range spec.Series {
		val, _, err := q.QueryRange(ctx, s.Query, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("series %s: %w", s.Name, err))
			continue
		}
		m, ok := val.(model.Matrix)
		if !ok {
			errs = append(errs, fmt.Errorf("series %s: got %s, want a matrix", s.Name, val.Type()))
			continue
		}
		p := chartPanel{title: cmp.Or(s.Title, s.Name), unit: s.Unit}
		slices.SortFunc(m, func(a, b *model.SampleStream) int { return strings.Compare(a.Metric.String(), b.Metric.String()) })
		for i, ss := range m {
			if i == maxLinesPerSeries {
				p.title += fmt.Sprintf(" (first %d of %d series)", maxLinesPerSeries, len(m))
				break
			}
			var pts plotter.XYs
			for _, v := range ss.Values {
				f := float64(v.Value)
				if math.IsNaN(f) || math.IsInf(f, 0) {
					continue
				}
				pts = append(pts, plotter.XY{X: float64(v.Timestamp.Time().Unix()), Y: f})
			}
			if len(pts) > 0 {
				p.lines = append(p.lines, chartLine{label: lineLabel(ss.Metric, m), points: pts})
			}
		}
		if len(p.lines) > 0 {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return nil, errors.Join(append([]error{errors.New("no data for any series")}, errs...)...)
	}
	return panels, nil
}

// lineLabel names a line by the labels that tell it apart from its siblings (pod first).
func lineLabel(m model.Metric, all model.Matrix) string {
	if len(all) < 2 {
		return ""
	}
	for _, name := range []model.LabelName{"pod", "model_name", "instance", "engine"} {
		if v, ok := m[name]; ok {
			return string(v)
		}
	}
	return m.String()
}

// renderChartPNG draws the panels stacked (one per series, shared time axis), with the alert's
// start as a dashed red line. Sized and lettered to be readable on a phone.
func renderChartPNG(title string, panels []chartPanel, from, to, marker time.Time) ([]byte, error) {
	const (
		width       = 8 * vg.Inch
		panelHeight = 3 * vg.Inch
		dpi         = 120
	)
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		if i == 0 && title != "" {
			p.Title.Text = title + "\n" + pn.title
		}
		if pn.unit != "" {
			p.Title.Text += " (" + pn.unit + ")"
		}
		p.Title.TextStyle.Font.Size = vg.Points(17)
		p.X.Tick.Marker = plot.TimeTicks{Format: "15:04", Time: func(t float64) time.Time { return time.Unix(int64(t), 0).UTC() }}
		p.X.Tick.Label.Font.Size = vg.Points(14)
		p.Y.Tick.Label.Font.Size = vg.Points(14)
		p.X.Min, p.X.Max = float64(from.Unix()), float64(to.Unix())
		p.Legend.TextStyle.Font.Size = vg.Points(13)
		p.Legend.Top = true
		p.Legend.Left = true
		p.Add(plotter.NewGrid())
		ymin, ymax := math.Inf(1), math.Inf(-1)
		for j, l := range pn.lines {
			ln, err := plotter.NewLine(l.points)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %w", pn.title, err)
			}
			ln.Color = lineColors[j%len(lineColors)]
			ln.Width = vg.Points(2.5)
			p.Add(ln)
			if l.label != "" {
				p.Legend.Add(l.label, ln)
			}
			for _, pt := range l.points {
				ymin, ymax = min(ymin, pt.Y), max(ymax, pt.Y)
			}
		}
		if ymin >= 0 {
			p.Y.Min = 0
		}
		if ymax <= p.Y.Min {
			ymax = p.Y.Min + 1
		}
		p.Y.Max = ymax * 1.1
		if !marker.IsZero() && !marker.Before(from) && !marker.After(to) {
			x := float64(marker.Unix())
			ml, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
			if err == nil {
				ml.Color = color.RGBA{R: 220, A: 255}
				ml.Width = vg.Points(2)
				ml.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
				p.Add(ml)
				if i == 0 {
					p.Legend.Add("alert start", ml)
				}
			}
		}
		plots[i] = []*plot.Plot{p}
	}
	img := vgimg.NewWith(vgimg.UseWH(width, panelHeight*vg.Length(len(panels))), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter, PadY: 3 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
