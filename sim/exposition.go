package sim

import (
	"bufio"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// contentTypeText is prometheus_client's text exposition (generate_latest).
const contentTypeText = "text/plain; version=0.0.4; charset=utf-8"

// metricsHandler serves the registry the way vLLM's prometheus_client renders its text format,
// not client_golang's way: floats rendered as Python does (le="1.0", le="+Inf", counts "5.0"), a
// `_created` sample for every counter and histogram child, as a separate gauge family after its
// family (generate_latest), labels sorted by name.
//
// prometheus_client's ASGI app also answers OpenMetrics when the scraper asks for it (Prometheus
// does by default). vllm-sim always answers the text format: with OpenMetrics served to the
// Debian Prometheus (2.42) the end-to-end test's healthy pod showed TTFT p99 spikes that the
// text format does not, a difference not understood yet.
func metricsHandler(g prometheus.Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fams, err := g.Gather()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentTypeText)
		bw := bufio.NewWriter(w)
		writeExposition(bw, fams)
		_ = bw.Flush()
	})
}

// writeExposition renders families as prometheus_client's generate_latest (text 0.0.4).
func writeExposition(w io.Writer, fams []*dto.MetricFamily) {
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
		help := helpEscaper.Replace(f.GetHelp())
		b.WriteString("# HELP " + name + " " + help + "\n")
		b.WriteString("# TYPE " + name + " " + typ + "\n")
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
				sample(&created, base+"_created", lp, "", "", *ct)
			}
		}
		if created.Len() > 0 {
			b.WriteString("# HELP " + base + "_created " + help + "\n")
			b.WriteString("# TYPE " + base + "_created gauge\n")
			b.WriteString(created.String())
		}
	}
	_, _ = io.WriteString(w, b.String())
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// sample writes one line; extra is one more label (le) put in its sorted place among the
// others (client_golang gathers labels sorted by name, as prometheus_client prints them).
func sample(b *strings.Builder, name string, lp []*dto.LabelPair, extraName, extraValue string, v float64) {
	b.WriteString(name)
	n := len(lp)
	if extraName != "" {
		n++
	}
	if n > 0 {
		b.WriteByte('{')
		first, extraDone := true, extraName == ""
		label := func(k, v string) {
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(k)
			b.WriteString(`="`)
			b.WriteString(labelEscaper.Replace(v))
			b.WriteByte('"')
		}
		for _, l := range lp {
			if !extraDone && extraName < l.GetName() {
				label(extraName, extraValue)
				extraDone = true
			}
			label(l.GetName(), l.GetValue())
		}
		if !extraDone {
			label(extraName, extraValue)
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(pyFloat(v))
	b.WriteByte('\n')
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
