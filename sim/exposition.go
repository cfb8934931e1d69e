package sim

import (
	"bufio"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Content types vLLM's /metrics answers with (prometheus_client's ASGI app negotiates on Accept).
const (
	contentTypeText        = "text/plain; version=0.0.4; charset=utf-8"
	contentTypeOpenMetrics = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

// metricsHandler serves the registry the way vLLM's prometheus_client does, not client_golang's
// way: floats rendered as Python does (le="1.0", le="+Inf", counts "5.0"), a `_created` sample
// for every counter and histogram child (in the text format as a separate gauge family after
// its family, as prometheus_client's generate_latest writes it; inline in OpenMetrics), labels
// sorted by name, and OpenMetrics when the scraper asks for it (Prometheus does by default).
func metricsHandler(g prometheus.Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fams, err := g.Gather()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		om := strings.Contains(r.Header.Get("Accept"), "application/openmetrics-text")
		if om {
			w.Header().Set("Content-Type", contentTypeOpenMetrics)
		} else {
			w.Header().Set("Content-Type", contentTypeText)
		}
		bw := bufio.NewWriter(w)
		writeExposition(bw, fams, om)
		_ = bw.Flush()
	})
}

// writeExposition renders families as prometheus_client's generate_latest (text 0.0.4) or its
// OpenMetrics exposition.
func writeExposition(w io.Writer, fams []*dto.MetricFamily, openMetrics bool) {
	var b strings.Builder
	for _, f := range fams {
		name := f.GetName()
		base := name // prometheus_client's metric.name: counters without _total
		typ := "gauge"
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			typ, base = "counter", strings.TrimSuffix(name, "_total")
		case dto.MetricType_HISTOGRAM:
			typ = "histogram"
		}
		head := name
		if openMetrics {
			head = base
		}
		help := strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(f.GetHelp())
		b.WriteString("# HELP " + head + " " + help + "\n")
		b.WriteString("# TYPE " + head + " " + typ + "\n")
		var created strings.Builder
		for _, m := range f.GetMetric() {
			lp := m.GetLabel()
			var ct *float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				sample(&b, base+"_total", lp, "", "", m.GetCounter().GetValue())
				if t := m.GetCounter().GetCreatedTimestamp(); t != nil {
					v := float64(t.GetSeconds()) + float64(t.GetNanos())/1e9
					ct = &v
				}
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, bk := range h.GetBucket() {
					sample(&b, base+"_bucket", lp, "le", pyFloat(bk.GetUpperBound()), float64(bk.GetCumulativeCount()))
				}
				sample(&b, base+"_bucket", lp, "le", "+Inf", float64(h.GetSampleCount()))
				sample(&b, base+"_count", lp, "", "", float64(h.GetSampleCount()))
				sample(&b, base+"_sum", lp, "", "", h.GetSampleSum())
				if t := h.GetCreatedTimestamp(); t != nil {
					v := float64(t.GetSeconds()) + float64(t.GetNanos())/1e9
					ct = &v
				}
			default:
				sample(&b, name, lp, "", "", m.GetGauge().GetValue())
			}
			if ct != nil {
				if openMetrics {
					sample(&b, base+"_created", lp, "", "", *ct)
				} else {
					sample(&created, base+"_created", lp, "", "", *ct)
				}
			}
		}
		if created.Len() > 0 {
			b.WriteString("# HELP " + base + "_created " + help + "\n")
			b.WriteString("# TYPE " + base + "_created gauge\n")
			b.WriteString(created.String())
		}
	}
	if openMetrics {
		b.WriteString("# EOF\n")
	}
	_, _ = io.WriteString(w, b.String())
}

// sample writes one line; extra is one more label (le) sorted in with the others.
func sample(b *strings.Builder, name string, lp []*dto.LabelPair, extraName, extraValue string, v float64) {
	type kv struct{ k, v string }
	ls := make([]kv, 0, len(lp)+1)
	for _, l := range lp {
		ls = append(ls, kv{l.GetName(), l.GetValue()})
	}
	if extraName != "" {
		ls = append(ls, kv{extraName, extraValue})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].k < ls[j].k })
	b.WriteString(name)
	if len(ls) > 0 {
		esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
		b.WriteByte('{')
		for i, l := range ls {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l.k + `="` + esc.Replace(l.v) + `"`)
		}
		b.WriteByte('}')
	}
	b.WriteString(" " + pyFloat(v) + "\n")
}

// pyFloat is prometheus_client's floatToGoString: Python's repr of a float, switched to an
// exponent the way Go would for large positive values.
func pyFloat(d float64) string {
	switch {
	case math.IsInf(d, 1):
		return "+Inf"
	case math.IsInf(d, -1):
		return "-Inf"
	case math.IsNaN(d):
		return "NaN"
	}
	s := pyRepr(d)
	dot := strings.IndexByte(s, '.')
	if d > 0 && dot > 6 {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mantissa + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// pyRepr is Python's repr(float): the shortest round-trip digits, fixed notation from 1e-4 up to
// 1e16 (always with a decimal point), exponent notation outside.
func pyRepr(d float64) string {
	if d == 0 {
		if math.Signbit(d) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(d); a >= 1e16 || a < 1e-4 {
		return strconv.FormatFloat(d, 'e', -1, 64)
	}
	s := strconv.FormatFloat(d, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
