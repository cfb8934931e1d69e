package prometheus

import (
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"regexp"
	"strings"
	"testing"

	promparser "github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// VLLMEngineStalled and the playbooks' gate (playbooks/builtin/common/progress.yaml, the fleet's
// stall query) decide a stall by one condition: what the engine held the whole window, no token,
// no engine step, no finished request, not asleep, no pause operation. They are written twice,
// as PromQL in two places (a rule file is not a playbook), so this test is what keeps them one:
// it fails when either changes without the other. What differs by design, and only that, is
// normalised first: the alert groups by the labels it fires with (model_name instead of the
// scrape's instance), joins the pause operations (series without model_name or engine) by
// namespace and pod where the fleet joins them by instance (a pod may lack a pod label there),
// and holds "at least the threshold" (1) where the fleet holds "more than 0" (gauges of
// requests are whole numbers). And the alert alone pages on an idle engine's hang (nothing held,
// its API server gaining alerts.stall.idle_connections open descriptors): the gate says
// "possibly hung while idle" of that, inconclusive, never stalled (clients holding idle
// connections look the same), so that branch is taken out of the alert before comparing.
func TestVLLMEngineStalledIsTheGatesStallCondition(t *testing.T) {
	var alert string
	for _, r := range mustRules(t, "production") {
		if r.Alert == "VLLMEngineStalled" {
			alert = r.Expr
		}
	}
	if alert == "" {
		t.Fatal("no VLLMEngineStalled rule")
	}
	idle := regexp.MustCompile(`\s+or \(sum by \(namespace, pod, model_name, engine\) \(max_over_time\([^\n]*\n\s*\+ on \(namespace, pod\) group_left \(\) \(sum by \(namespace, pod\) \(delta\(process_open_fds\[[^\]]*\]\)\) >= [0-9.]+\)`)
	if !idle.MatchString(alert) {
		t.Fatalf("VLLMEngineStalled has no idle-hang branch:\n%s", alert)
	}
	alert = idle.ReplaceAllString(alert, "")
	prof, err := LoadProfile("production")
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.NewSet(builtin, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := set.Get("engine-stalled")
	q, ok := p.Fleet.Query("stall")
	if !ok {
		t.Fatal("the gate has no fleet query stall")
	}
	if p.Window.String() != "5m0s" || prof.RateWindow != "5m" {
		t.Fatalf("the playbook's window %s and the rule's %s differ: compare them at one window", p.Window, prof.RateWindow)
	}
	fleet := p.ExpandFleet(q, map[string]string{})
	fleet = strings.ReplaceAll(fleet, "namespace, pod, instance, engine", "namespace, pod, model_name, engine")
	fleet = strings.ReplaceAll(fleet, "on (instance)", "on (namespace, pod)")
	fleet = strings.ReplaceAll(fleet, "by (instance)", "by (namespace, pod)")
	want, got := canonical(t, "the gate's stall", fleet), canonical(t, "VLLMEngineStalled", alert)
	got = strings.ReplaceAll(got, " >= (1)", " > (0)")
	if got != want {
		t.Errorf("VLLMEngineStalled and the gate's stall condition drifted apart: change both (deploy/prometheus/vllm-alerts.rules.yml.tmpl, playbooks/builtin/common/progress.yaml)\n"+
			"alert: %s\ngate:  %s", got, want)
	}
}

// canonical is expr as the PromQL parser reads it, printed with every binary operation in
// parentheses (and no others): one spacing, one parenthesisation, whatever the text had.
func canonical(t *testing.T, what, expr string) string {
	t.Helper()
	e, err := promparser.NewParser(promparser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, expr)
	}
	return bracketed(e).String()
}

// bracketed is e without its own parentheses and with each binary operation's operands in
// parentheses.
func bracketed(e promparser.Expr) promparser.Expr {
	switch x := e.(type) {
	case *promparser.ParenExpr:
		return bracketed(x.Expr)
	case *promparser.BinaryExpr:
		x.LHS = &promparser.ParenExpr{Expr: bracketed(x.LHS)}
		x.RHS = &promparser.ParenExpr{Expr: bracketed(x.RHS)}
	case *promparser.AggregateExpr:
		x.Expr = bracketed(x.Expr)
	case *promparser.Call:
		for i, a := range x.Args {
			x.Args[i] = bracketed(a)
		}
	case *promparser.UnaryExpr:
		x.Expr = bracketed(x.Expr)
	case *promparser.SubqueryExpr:
		x.Expr = bracketed(x.Expr)
	}
	return e
}
