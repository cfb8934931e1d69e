package playbooks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/traces"
)

// NA is how a missing value renders.
const NA = "n/a"

// FormatValue renders a value with its unit for people: "1.24 s", "230 ms", "93.1%", "0.42/s".
func FormatValue(v *float64, unit string) string {
	if v == nil {
		return NA
	}
	x := *v
	switch unit {
	case "s":
		return formatSeconds(x)
	case "ratio":
		return formatPercent(x)
	case "per_second":
		return trimFloat(x, 3) + "/s"
	case "count":
		return trimFloat(x, 1)
	case "tokens":
		return trimFloat(x, 0) + " tokens"
	case "x":
		return trimFloat(x, 2) + "x"
	default:
		return trimFloat(x, 3)
	}
}

func formatSeconds(x float64) string {
	ax := math.Abs(x)
	switch {
	case ax == 0:
		return "0 s"
	case ax < 0.001:
		return trimFloat(x*1e6, 0) + " µs"
	case ax < 1:
		return trimFloat(x*1000, 0) + " ms"
	case ax < 120:
		return trimFloat(x, 2) + " s"
	default:
		return time.Duration(x * float64(time.Second)).Round(time.Second).String()
	}
}

func formatPercent(x float64) string {
	p := x * 100
	switch {
	case p != 0 && math.Abs(p) < 0.1:
		return trimFloat(p, 3) + "%"
	default:
		return trimFloat(p, 1) + "%"
	}
}

// trimFloat formats with at most prec decimals and without trailing zeros; large values keep
// three significant digits in their integer part.
func trimFloat(x float64, prec int) string {
	if math.Abs(x) >= 100 {
		prec = 0
	} else if math.Abs(x) < 1 && prec < 3 && x != 0 && prec > 0 {
		prec = 3
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// templateFuncs are available in titles, summaries and actions. Each accepts a missing value
// (nil) and renders it as n/a.
var templateFuncs = template.FuncMap{
	"pct":   func(v any) string { return FormatValue(toPtr(v), "ratio") },
	"secs":  func(v any) string { return FormatValue(toPtr(v), "s") },
	"rate":  func(v any) string { return FormatValue(toPtr(v), "per_second") },
	"num":   func(v any) string { return FormatValue(toPtr(v), "") },
	"count": func(v any) string { return FormatValue(toPtr(v), "count") },
	"times": func(v any) string { return FormatValue(toPtr(v), "x") },
	// ratio divides a by b and renders a factor ("3.2x"); n/a when either is missing or b is 0.
	"ratio": func(a, b any) string {
		pa, pb := toPtr(a), toPtr(b)
		if pa == nil || pb == nil || *pb == 0 {
			return NA
		}
		r := *pa / *pb
		return FormatValue(&r, "x")
	},
	// rest is what a share leaves (1 - v: the miss share of a hit rate); nil when missing.
	"rest": func(v any) *float64 {
		p := toPtr(v)
		if p == nil {
			return nil
		}
		r := 1 - *p
		return &r
	},
	// has reports whether a value is present.
	"has": func(v any) bool { return toPtr(v) != nil },
	// zero reports whether a value is present and 0 (a gauge that never changed, a target down);
	// false when missing.
	"zero": func(v any) bool { p := toPtr(v); return p != nil && *p == 0 },
	// atleast reports whether a is present and at least b (a threshold param); false when missing.
	"atleast": func(a, b any) bool {
		pa, pb := toPtr(a), toPtr(b)
		return pa != nil && pb != nil && *pa >= *pb
	},
	// since compares a gauge now with its value over the window (a mean or peak) and says, when
	// they differ a lot, that the condition has eased or worsened since: " (eased since: 3 now)".
	// Empty when they are close or either is missing.
	"since": since,
	// dict makes a map of its key, value pairs: the argument of a named template that needs more
	// than one value, as in Helm ({{ template "stalled_for" (dict "for" .stalled_for_this
	// "window" .window) }}). An odd count or a key that is not a string is an error.
	"dict": dict,
}

func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict needs key, value pairs, got %d arguments", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// sinceMinChange is the smallest change, per unit, that since reports.
var sinceMinChange = map[string]float64{"count": 2, "ratio": 0.1}

// since renders how far a gauge now has moved from its value over the window: " (eased since:
// X now)" when it is less than half of it, " (worsened since: X now)" when it is more than 1.5
// times it, nothing otherwise. Higher is worse for every gauge the playbooks read (queue, batch,
// KV usage).
func since(window, now any, unit string) string {
	pw, pn := toPtr(window), toPtr(now)
	if pw == nil || pn == nil {
		return ""
	}
	w, n := *pw, *pn
	if math.Abs(n-w) < sinceMinChange[unit] {
		return ""
	}
	switch {
	case n < 0.5*w:
		return " (eased since: " + FormatValue(pn, unit) + " now)"
	case n > 1.5*w:
		return " (worsened since: " + FormatValue(pn, unit) + " now)"
	}
	return ""
}

func toPtr(v any) *float64 {
	switch x := v.(type) {
	case *float64:
		return x
	case float64:
		return &x
	case int:
		f := float64(x)
		return &f
	default:
		return nil
	}
}

// templateData is what templates see: every query value (nil when missing), every param, the
// scope labels under .labels, .window, the fleet values (waiting_this, ...), the sibling
// comparison under .fleet (.fleet.pod, .fleet.scope, .fleet.pods, .fleet.affected,
// .fleet.affected_pods) and what the traces show under .traces (see traceData).
func templateData(p *Playbook, values map[string]*float64, labels map[string]string, fleet *FleetView, tr *traces.Report, kf *facts.Facts) map[string]any {
	d := make(map[string]any, len(p.Queries)+len(p.Params)+3)
	for _, q := range p.Queries {
		if v, ok := values[q.Name]; ok && v != nil {
			d[q.Name] = v
		} else {
			d[q.Name] = (*float64)(nil)
		}
	}
	for _, n := range fleetNames(p) {
		if v, ok := values[n]; ok && v != nil {
			d[n] = v
		} else {
			d[n] = (*float64)(nil)
		}
	}
	d["fleet"] = fleetTemplateData(fleet)
	for k, v := range p.Params {
		d[k] = v
	}
	ls := make(map[string]string, len(p.Scope)+len(labels))
	for _, name := range p.Scope {
		ls[name] = "" // every scope label exists for templates, empty when the alert lacks it
	}
	for k, v := range labels {
		ls[k] = v
	}
	d["labels"] = ls
	d["window"] = fmt.Sprint(p.Window)
	d["traces"] = traceData(tr)
	d["baseline_from"] = baselineFromData(p, nil)
	factEnv(d, p.catalog, kf, true)
	return d
}

// baselineFromData is .baseline_from in templates: for every baseline_of query, where the value
// compared with came from ("the pod a day ago", "the model a day ago", "the 30m before the
// window"), or "no baseline".
func baselineFromData(p *Playbook, from map[string]string) map[string]string {
	out := map[string]string{}
	for _, q := range p.Queries {
		if q.BaselineOf != "" {
			out[q.Name] = "no baseline"
			if f := from[q.Name]; f != "" {
				out[q.Name] = f
			}
		}
	}
	return out
}

// traceData is .traces in templates: .traces.summary is the one line that locates the problem
// in the slowest traced requests ("" when traces are off, failed or found none), .traces.count
// how many are listed, .traces.service the service searched, and .traces.queue_share,
// .traces.prefill_share, .traces.decode_share where their time went (nil without requests).
func traceData(tr *traces.Report) map[string]any {
	d := map[string]any{"summary": "", "count": 0, "service": "",
		"queue_share": (*float64)(nil), "prefill_share": (*float64)(nil), "decode_share": (*float64)(nil)}
	if tr == nil {
		return d
	}
	d["service"] = tr.Service
	d["count"] = len(tr.Requests)
	if len(tr.Requests) > 0 {
		d["summary"] = tr.Summary
	}
	if q, p, dec, ok := tr.Shares(); ok {
		d["queue_share"], d["prefill_share"], d["decode_share"] = &q, &p, &dec
	}
	return d
}
