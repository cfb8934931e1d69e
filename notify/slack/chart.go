package slack

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// A chart's drawing: the panels that fetchChart (chartdata.go) read from Prometheus, drawn as a
// PNG with gonum/plot.

// lineColors avoids red, which marks the alert's start.
var lineColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255},
	color.RGBA{R: 140, G: 86, B: 75, A: 255}, color.RGBA{R: 127, G: 127, B: 127, A: 255},
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
			xys := make(plotter.XYs, len(l.points))
			for k, pt := range l.points {
				xys[k] = plotter.XY{X: pt.x, Y: pt.y}
			}
			ln, err := plotter.NewLine(xys)
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
				ymin, ymax = min(ymin, pt.y), max(ymax, pt.y)
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
