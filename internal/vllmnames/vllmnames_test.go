package vllmnames

import (
	"strings"
	"testing"
)

func TestRewriteRenamesEveryVLLMSelectorInPlace(t *testing.T) {
	kserve := Naming{Prefix: "kserve_vllm:", RouterLabel: "server"}
	cases := []struct {
		name string
		n    Naming
		in   string
		want string
	}{
		{"a bare selector gets the prefix and braces excluding the router", kserve,
			`sum(vllm:num_requests_waiting)`, `sum(kserve_vllm:num_requests_waiting{server=""})`},
		{"matchers are kept, the exclusion goes first", kserve,
			`sum(rate(vllm:request_success_total{finished_reason="abort"}[5m]))`,
			`sum(rate(kserve_vllm:request_success_total{server="",finished_reason="abort"}[5m]))`},
		{"offset and layout are untouched", kserve,
			"sum(rate(vllm:x_sum[5m] offset 1d))\n  /\nsum(rate(vllm:x_count[5m] offset 1d))",
			"sum(rate(kserve_vllm:x_sum{server=\"\"}[5m] offset 1d))\n  /\nsum(rate(kserve_vllm:x_count{server=\"\"}[5m] offset 1d))"},
		{"an instant selector with offset", kserve,
			`vllm:num_requests_waiting offset 5m`, `kserve_vllm:num_requests_waiting{server=""} offset 5m`},
		{"other metrics stay as they are", kserve,
			`up{job="vllm"} and on (instance) vllm:num_requests_running{}`,
			`up{job="vllm"} and on (instance) kserve_vllm:num_requests_running{server="",}`},
		{"a __name__ matcher is renamed at its start", kserve,
			`count({__name__=~"vllm:.*_total",pod="p"})`, `count({server="",__name__=~"kserve_vllm:.*_total",pod="p"})`},
		{"a selector of the router's own series is left as the router writes it", kserve,
			`vllm:num_requests_running{server="http://a:8000"}`, `vllm:num_requests_running{server="http://a:8000"}`},
		{"so is one that asks for any router series", kserve,
			`delta(vllm:num_prefill_requests{server!=""}[5m]) and on (instance) vllm:num_requests_running`,
			`delta(vllm:num_prefill_requests{server!=""}[5m]) and on (instance) kserve_vllm:num_requests_running{server=""}`},
		{"a matcher the empty value satisfies is no router selector", kserve,
			`vllm:num_requests_running{server=~".*"}`, `kserve_vllm:num_requests_running{server=~".*"}`},
		{"label values that look like names are not touched", kserve,
			`vllm:x{model_name="vllm:x"}`, `kserve_vllm:x{server="",model_name="vllm:x"}`},
		{"the default prefix only adds the exclusion", Default(),
			`max(vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc)`,
			`max(vllm:kv_cache_usage_perc{server=""} or vllm:gpu_cache_usage_perc{server=""})`},
		{"no router label and the default prefix change nothing", Naming{Prefix: "vllm:"},
			`sum(vllm:num_requests_waiting)`, `sum(vllm:num_requests_waiting)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.n.Rewrite(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Rewrite(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
			if _, err := parser.ParseExpr(got); err != nil {
				t.Errorf("result does not parse: %v", err)
			}
		})
	}
}

func TestRewriteTemplateKeepsPlaceholders(t *testing.T) {
	tmpl := `sum(rate(vllm:request_success_total{finished_reason="abort",$scope}[$window] offset $window)) > $min`
	sample := strings.NewReplacer("$scope", `_s="1"`, "$window", "999999s", "$min", "1111").Replace(tmpl)
	got, err := Naming{Prefix: "kserve_vllm:", RouterLabel: "server"}.RewriteTemplate(tmpl, sample)
	if err != nil {
		t.Fatal(err)
	}
	want := `sum(rate(kserve_vllm:request_success_total{server="",finished_reason="abort",$scope}[$window] offset $window)) > $min`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []string{"vllm:", "kserve_vllm:", "a:b:"} {
		if err := (Naming{Prefix: p}).Validate(); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", "vllm", "kserve-vllm:", "x{y}:", "$x:"} {
		if err := (Naming{Prefix: p}).Validate(); err == nil {
			t.Errorf("%q: want an error", p)
		}
	}
	if err := (Naming{Prefix: "vllm:", RouterLabel: "bad-label"}).Validate(); err == nil {
		t.Error("bad router label: want an error")
	}
}
