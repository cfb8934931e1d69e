package slack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// A chart's data: the range queries of a playbook's chart, apart from its drawing (chart.go).

// RangeQuerier is the part of the Prometheus HTTP API a chart needs; v1.API implements it.
type RangeQuerier interface {
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, error)
}

// maxLinesPerSeries bounds the lines one query may draw (a query without aggregation can return
// one series per pod).
const maxLinesPerSeries = 6

// chartLine is one line of a panel: its points, x in Unix seconds.
type chartLine struct {
	label  string
	points []chartPoint
}

// chartPoint is one sample of a line.
type chartPoint struct{ x, y float64 }

// chartPanel is the lines of one chart series (one query), drawn in their own panel so that
// series with different units never share an axis.
type chartPanel struct {
	title string
	unit  string
	lines []chartLine
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
			var pts []chartPoint
			for _, v := range ss.Values {
				f := float64(v.Value)
				if math.IsNaN(f) || math.IsInf(f, 0) {
					continue
				}
				pts = append(pts, chartPoint{x: float64(v.Timestamp.Time().Unix()), y: f})
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
