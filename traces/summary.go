package traces

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Shares returns the part of the slowest requests' total time spent queued, in prefill and
// decoding (each 0..1; they need not add up to 1: detokenisation and scheduling gaps are in
// none of them). ok is false when there are no requests.
func (r *Report) Shares() (queue, prefill, decode float64, ok bool) {
	var total, q, p, d time.Duration
	for _, x := range r.Requests {
		total += x.Duration
		q += x.Queue
		p += x.Prefill
		d += x.Decode
	}
	if total <= 0 {
		return 0, 0, 0, false
	}
	return q.Seconds() / total.Seconds(), p.Seconds() / total.Seconds(), d.Seconds() / total.Seconds(), true
}

// Summarize is the one line that locates the problem in the slowest requests: where their time
// went (queue, prefill, decode) and, when their prompts or outputs set them apart from the other
// traced requests of the window, how. all is every traced request the search returned.
func Summarize(rep *Report, all []Request) string {
	n := len(rep.Requests)
	if n == 0 {
		return fmt.Sprintf("No traced requests of service %q slower than %s in the window: check that vLLM runs with "+
			"--otlp-traces-endpoint and OTEL_SERVICE_NAME=%s (vLLM sets no service name of its own).",
			rep.Service, rep.MinDuration, rep.Service)
	}
	q, p, d, _ := rep.Shares()
	subject := "the slowest request"
	if n > 1 {
		subject = fmt.Sprintf("the %d slowest requests", n)
	}
	lo, hi := rep.Requests[n-1].Duration, rep.Requests[0].Duration
	span := formatDuration(hi)
	if n > 1 {
		span = formatDuration(lo) + "-" + formatDuration(hi)
	}
	phases := []struct {
		name  string
		share float64
	}{{"queued", q}, {"in prefill", p}, {"decoding", d}}
	sort.SliceStable(phases, func(i, j int) bool { return phases[i].share > phases[j].share })
	their := "their"
	if n == 1 {
		their = "its"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s (%s) spent %s of %s time %s (%s %s, %s %s)",
		strings.ToUpper(subject[:1]), subject[1:], span, pct(phases[0].share), their, phases[0].name,
		phaseWord(phases[1].name), pct(phases[1].share), phaseWord(phases[2].name), pct(phases[2].share))
	if phases[0].name == "decoding" && q+p > 0 {
		// Decode dominates any long request's time; what came before the first token (queue or
		// prefill) is what a TTFT alert is about.
		fmt.Fprintf(&b, "; %s time to first token was %s prefill, %s queue", their, pct(p/(q+p)), pct(q/(q+p)))
	}

	// What sets them apart: their prompts or outputs against the other traced requests.
	others := rest(all, rep.Requests)
	minPrompt, maxPrompt := tokenRange(rep.Requests, func(r Request) int { return r.PromptTokens })
	minOut, maxOut := tokenRange(rep.Requests, func(r Request) int { return r.CompletionTokens })
	switch {
	case len(others) >= 3 && n >= 2 && float64(minPrompt) >= 2*median(others, func(r Request) int { return r.PromptTokens }):
		fmt.Fprintf(&b, "; they all had prompts over %s tokens, against a median of %s in the other %d traced requests",
			roundDown(minPrompt), formatTokens(int(median(others, func(r Request) int { return r.PromptTokens }))), len(others))
	case len(others) >= 3 && n >= 2 && float64(minOut) >= 2*median(others, func(r Request) int { return r.CompletionTokens }):
		fmt.Fprintf(&b, "; they all generated over %s tokens, against a median of %s in the other %d traced requests",
			roundDown(minOut), formatTokens(int(median(others, func(r Request) int { return r.CompletionTokens }))), len(others))
	default:
		fmt.Fprintf(&b, "; prompts %s, outputs %s tokens", tokenSpan(minPrompt, maxPrompt), tokenSpan(minOut, maxOut))
	}
	b.WriteString(".")
	return b.String()
}

func phaseWord(name string) string {
	switch name {
	case "queued":
		return "queue"
	case "in prefill":
		return "prefill"
	default:
		return "decode"
	}
}

// rest returns the requests of all that are not among slowest.
func rest(all, slowest []Request) []Request {
	skip := make(map[string]bool, len(slowest))
	for _, r := range slowest {
		skip[r.TraceID+"/"+r.RequestID] = true
	}
	var out []Request
	for _, r := range all {
		if !skip[r.TraceID+"/"+r.RequestID] {
			out = append(out, r)
		}
	}
	return out
}

func tokenRange(rs []Request, f func(Request) int) (lo, hi int) {
	lo = math.MaxInt
	for _, r := range rs {
		lo, hi = min(lo, f(r)), max(hi, f(r))
	}
	return lo, hi
}

func median(rs []Request, f func(Request) int) float64 {
	v := make([]int, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	sort.Ints(v)
	if len(v)%2 == 1 {
		return float64(v[len(v)/2])
	}
	return float64(v[len(v)/2-1]+v[len(v)/2]) / 2
}

func tokenSpan(lo, hi int) string {
	if lo == hi {
		return formatTokens(lo)
	}
	return formatTokens(lo) + "-" + formatTokens(hi)
}

// formatTokens prints 5234 as 5.2k and 812 as 812.
func formatTokens(n int) string {
	switch {
	case n >= 100000:
		return fmt.Sprintf("%dk", n/1000)
	case n >= 1000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	default:
		return fmt.Sprint(n)
	}
}

// roundDown rounds n down to two significant digits, so "over" stays true: 4873 -> 4.8k.
func roundDown(n int) string {
	if n < 100 {
		return fmt.Sprint(n)
	}
	p := int(math.Pow(10, math.Floor(math.Log10(float64(n)))-1))
	return formatTokens(n / p * p)
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// formatDuration prints 3.2s, 850ms, 1m12s.
func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= 10*time.Second:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d >= time.Second:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), ".0") + "s"
	default:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
}

// FormatDuration is formatDuration for renderers.
func FormatDuration(d time.Duration) string { return formatDuration(d) }

// FormatTokens is formatTokens for renderers.
func FormatTokens(n int) string { return formatTokens(n) }

// Line is a request in one line: its duration, phases and tokens.
func (r Request) Line() string {
	return fmt.Sprintf("%s  queue %s  prefill %s  decode %s  prompt %s  output %s tokens",
		formatDuration(r.Duration), formatDuration(r.Queue), formatDuration(r.Prefill), formatDuration(r.Decode),
		formatTokens(r.PromptTokens), formatTokens(r.CompletionTokens))
}

// Heading says what was searched: "service "vllm-x", llm_request over 1s, 42 traced requests
// in the window".
func (r *Report) Heading() string {
	h := fmt.Sprintf("Jaeger service %q, %s", r.Service, r.Operation)
	if r.MinDuration > 0 {
		h += " over " + formatDuration(r.MinDuration)
	}
	for _, k := range sortedKeys(r.Tags) {
		h += fmt.Sprintf(", %s=%q", k, r.Tags[k])
	}
	if r.Error == "" {
		more := ""
		if r.Capped {
			more = " (the most recent; more exist)"
		}
		h += fmt.Sprintf(", %d traced in the window%s", r.Searched, more)
	}
	return h
}
