#!/usr/bin/env python3
"""Regenerates the promtool unit tests in this directory (*.yml and fast/*.yml).

Not needed to run the tests (deploy/prometheus/test.sh does that); use it after changing the scenarios
below or the annotation texts in vllm-alerts.rules.yml.tmpl: expected annotations are rendered from the
committed rules files, so run `go generate ./deploy/prometheus` first. Needs python3 with PyYAML.
Review the diff: the scenarios and the expected alerts/values below are the actual test content.
"""
import os
import math
import re

import yaml

TTFT = [0.001,0.005,0.01,0.02,0.04,0.06,0.08,0.1,0.25,0.5,0.75,1,2.5,5,7.5,10,20,40,80,160,640,2560]
TTFT_OLD = [0.001,0.005,0.01,0.02,0.04,0.06,0.08,0.1,0.25,0.5,0.75,1,2.5,5,7.5,10]
ITL = [0.01,0.025,0.05,0.075,0.1,0.15,0.2,0.3,0.4,0.5,0.75,1,2.5,5,7.5,10,20,40,80]
TPOT_OLD = [0.01,0.025,0.05,0.075,0.1,0.15,0.2,0.3,0.4,0.5,0.75,1,2.5]

def fmtle(b):
    # vLLM (Python prometheus_client) renders bucket bounds as floats: 1.0, 2.5, 10.0
    return repr(float(b))

def lbl(d):
    return ", ".join(f'{k}="{v}"' for k, v in d.items())

def hist(metric, labels, buckets, cdf, per_step, steps, mean):
    """Cumulative histogram: per_step observations each step, cdf(le) fraction at or below le."""
    out = []
    for b in buckets + [math.inf]:
        le = "+Inf" if b == math.inf else fmtle(b)
        frac = 1.0 if b == math.inf else cdf_at(cdf, b)
        inc = round(per_step * frac)
        out.append((f'{metric}_bucket{{{lbl(labels)}, le="{le}"}}', f"0+{inc}x{steps}"))
    out.append((f'{metric}_sum{{{lbl(labels)}}}', f"0+{round(per_step*mean, 3)}x{steps}"))
    out.append((f'{metric}_count{{{lbl(labels)}}}', f"0+{per_step}x{steps}"))
    return out

def flat_hist(metric, labels, buckets, steps):
    out = []
    for b in buckets + [math.inf]:
        le = "+Inf" if b == math.inf else fmtle(b)
        out.append((f'{metric}_bucket{{{lbl(labels)}, le="{le}"}}', f"1200+0x{steps}"))
    out.append((f'{metric}_sum{{{lbl(labels)}}}', f"900+0x{steps}"))
    out.append((f'{metric}_count{{{lbl(labels)}}}', f"1200+0x{steps}"))
    return out

def cdf_at(cdf, b):
    # cdf: list of (le, fraction) points; fraction of the largest point <= b
    f = 0.0
    for le, frac in cdf:
        if le <= b + 1e-12:
            f = frac
    return f

def gauge(metric, labels, values):
    return [(f'{metric}{{{lbl(labels)}}}', values)]

# ---------- annotation rendering, from the rendered rules file ----------
def load_rules(path):
    rules = {}
    for g in yaml.safe_load(open(path))["groups"]:
        for r in g["rules"]:
            rules[r["alert"]] = r
    return rules

def g4(v):
    return "%.4g" % v

def hdur(v):
    if abs(v) >= 1:
        assert v < 60
        return g4(v) + "s"
    prefix = ""
    for p in ["m", "u", "n"]:
        if abs(v) >= 1:
            break
        prefix = p
        v *= 1000
    return g4(v) + prefix + "s"

def hpct(v):
    return g4(v * 100) + "%"

def hum(v):
    assert 1 <= abs(v) < 1000 or v == 0
    return g4(v)

def render(tmpl, labels, value):
    def rep(m):
        expr = m.group(1).strip()
        if expr.startswith("$labels."):
            return labels.get(expr[len("$labels."):], "")
        fn = {"$value | humanizeDuration": hdur, "$value | humanizePercentage": hpct, "$value | humanize": hum}[expr]
        return fn(value)
    return re.sub(r"\{\{(.*?)\}\}", rep, tmpl)

def q(s):
    return "'" + s.replace("'", "''") + "'"

def emit(rules_file, rules_rel, cases, header):
    rules = load_rules(rules_file)
    o = [header.rstrip(), f"rule_files: [{rules_rel}]", "evaluation_interval: %s" % cases["eval_interval"], "", "tests:"]
    for c in cases["tests"]:
        o.append(f"  # {c['name']}")
        o.append(f"  - interval: {c['interval']}")
        o.append(f"    input_series:")
        for s, v in c["series"]:
            o.append(f"      - series: {q(s)}")
            o.append(f"        values: {q(v)}")
        o.append(f"    alert_rule_test:")
        for t in c["checks"]:
            o.append(f"      - eval_time: {t['at']}")
            o.append(f"        alertname: {t['alert']}")
            if not t.get("fire"):
                o.append(f"        exp_alerts: []")
                continue
            o.append(f"        exp_alerts:")
            r = rules[t["alert"]]
            for labels, value in t["fire"]:
                full = dict(labels)
                full["severity"] = r["labels"]["severity"]
                o.append(f"          - exp_labels:")
                for k, v in full.items():
                    o.append(f"              {k}: {v}")
                o.append(f"            exp_annotations:")
                for k in ["summary", "description", "runbook_url"]:
                    o.append(f"              {k}: {q(render(r['annotations'][k], full, value))}")
        o.append("")
    return "\n".join(o)


# ---------------- scenarios ----------------

D = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def L(pod, model="llama-3-8b", engine="0", ns="llm", ip="10.0.0.1"):
    return {"job": "vllm", "instance": f"{ip}:8000", "namespace": ns, "pod": pod, "model_name": model, "engine": engine}

def A(pod, model="llama-3-8b", ns="llm"):
    return {"namespace": ns, "pod": pod, "model_name": model}

N = 20  # steps
HDR = """# promtool unit tests for %s (production profile). Run: deploy/prometheus/test.sh
# Generated series follow vLLM's exposition: bucket bounds as in VLLM.md (rendered 1.0, 2.5, 10.0 like
# prometheus_client does), model_name and engine labels from vLLM, job/instance/namespace/pod from the
# scrape config. Counters grow per 1m step. exp_annotations must match promtool's rendering exactly.
"""

# ---- TTFT ----
TTFT_SLOW = [(0.25, .05), (0.5, .2), (0.75, .4), (1, .55), (2.5, .8), (5, .9), (7.5, .95), (10, .98), (20, 1.0)]   # p99 15s
TTFT_NEAR = [(0.5, .3), (1, .6), (2.5, .85), (5, .95), (7.5, .98), (10, 1.0)]                                       # p99 8.75s
TTFT_OK = [(0.1, .1), (0.25, .5), (0.5, .8), (0.75, .9), (1, .95), (2.5, .995), (5, 1.0)]                           # p99 ~2.3s
TTFT_OLD_SAT = [(1, .5), (5, .8), (10, .95)]  # 5% above the old top bucket (10s): quantile in +Inf

M = "vllm:time_to_first_token_seconds"
ttft = {"eval_interval": "1m", "tests": [
  {"name": "current vLLM, slow first tokens on both engines of one pod: one alert per pod, not before for: 5m",
   "interval": "1m",
   "series": hist(M, L("llama-0"), TTFT, TTFT_SLOW, 300, N, 3.1) + hist(M, L("llama-0", engine="1"), TTFT, TTFT_SLOW, 300, N, 3.1)
           + hist(M, L("llama-1", ip="10.0.0.2"), TTFT, TTFT_OK, 600, N, 0.3),
   "checks": [{"at": "4m", "alert": "VLLMTimeToFirstTokenP99High"},
              {"at": "12m", "alert": "VLLMTimeToFirstTokenP99High", "fire": [(A("llama-0"), 15)]}]},
  {"name": "healthy and slow-but-under-threshold (p99 8.75s) models do not fire",
   "interval": "1m",
   "series": hist(M, L("llama-0"), TTFT, TTFT_OK, 600, N, 0.3) + hist(M, L("mistral-0", model="mistral-7b", ip="10.0.0.3"), TTFT, TTFT_NEAR, 600, N, 1.5),
   "checks": [{"at": "12m", "alert": "VLLMTimeToFirstTokenP99High"}, {"at": "20m", "alert": "VLLMTimeToFirstTokenP99High"}]},
  {"name": "idle model (counters flat, histogram_quantile NaN) does not fire",
   "interval": "1m",
   "series": flat_hist(M, L("llama-0"), TTFT, N),
   "checks": [{"at": "12m", "alert": "VLLMTimeToFirstTokenP99High"}]},
  {"name": "vLLM before #15202 (top TTFT bucket 10s): p99 in +Inf saturates at 10s and still fires (>=)",
   "interval": "1m",
   "series": hist(M, L("llama-old-0", model="llama-2-7b"), TTFT_OLD, TTFT_OLD_SAT, 600, N, 4.0),
   "checks": [{"at": "12m", "alert": "VLLMTimeToFirstTokenP99High", "fire": [(A("llama-old-0", model="llama-2-7b"), 10)]}]},
]}

# ---- ITL ----
ITL_SLOW = [(0.05, .2), (0.1, .6), (0.2, .85), (0.3, .93), (0.5, .98), (0.75, 1.0)]   # p99 0.625s
ITL_OK = [(0.025, .3), (0.05, .7), (0.1, .9), (0.15, .98), (0.2, 1.0)]                # p99 0.175s
MN, MO = "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"
itl = {"eval_interval": "1m", "tests": [
  {"name": "current name (inter_token_latency) slow: fires after for: 5m",
   "interval": "1m",
   "series": hist(MN, L("llama-0"), ITL, ITL_SLOW, 6000, N, 0.12),
   "checks": [{"at": "4m", "alert": "VLLMInterTokenLatencyP99High"},
              {"at": "12m", "alert": "VLLMInterTokenLatencyP99High", "fire": [(A("llama-0"), 0.625)]}]},
  {"name": "old name only (time_per_output_token, old buckets up to 2.5s) slow: fires",
   "interval": "1m",
   "series": hist(MO, L("llama-old-0", model="llama-2-7b"), TPOT_OLD, ITL_SLOW, 6000, N, 0.12),
   "checks": [{"at": "12m", "alert": "VLLMInterTokenLatencyP99High", "fire": [(A("llama-old-0", model="llama-2-7b"), 0.625)]}]},
  {"name": "mixed fleet: new-only, old-only and both-names pods slow fire once each; a both-names healthy pod does not",
   "interval": "1m",
   "series": hist(MN, L("new-0"), ITL, ITL_SLOW, 6000, N, 0.12)
           + hist(MO, L("old-0", ip="10.0.0.2"), TPOT_OLD, ITL_SLOW, 6000, N, 0.12)
           + hist(MN, L("both-0", ip="10.0.0.3"), ITL, ITL_SLOW, 6000, N, 0.12) + hist(MO, L("both-0", ip="10.0.0.3"), ITL, ITL_SLOW, 6000, N, 0.12)
           + hist(MN, L("both-1", ip="10.0.0.4"), ITL, ITL_OK, 6000, N, 0.05) + hist(MO, L("both-1", ip="10.0.0.4"), ITL, ITL_OK, 6000, N, 0.05),
   "checks": [{"at": "12m", "alert": "VLLMInterTokenLatencyP99High",
               "fire": [(A("both-0"), 0.625), (A("new-0"), 0.625), (A("old-0"), 0.625)]}]},
  {"name": "pod exporting both names: the current name decides (old series healthy, new slow -> fires with the new value)",
   "interval": "1m",
   "series": hist(MN, L("both-0"), ITL, ITL_SLOW, 6000, N, 0.12) + hist(MO, L("both-0"), TPOT_OLD, ITL_OK, 6000, N, 0.05),
   "checks": [{"at": "12m", "alert": "VLLMInterTokenLatencyP99High", "fire": [(A("both-0"), 0.625)]}]},
  {"name": "healthy (p99 175ms) and idle models do not fire",
   "interval": "1m",
   "series": hist(MN, L("llama-0"), ITL, ITL_OK, 6000, N, 0.05) + flat_hist(MO, L("idle-0", ip="10.0.0.2"), TPOT_OLD, N)
           + flat_hist(MN, L("idle-1", ip="10.0.0.3"), ITL, N),
   "checks": [{"at": "12m", "alert": "VLLMInterTokenLatencyP99High"}]},
]}

# ---- KV cache ----
KN, KO = "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"
alt = " ".join(["1 0.88"] * 10) + " 1"   # 21 samples: dips below 0.9 every other minute
kv = {"eval_interval": "1m", "tests": [
  {"name": "current name at 95%: fires after for: 5m, not before",
   "interval": "1m",
   "series": gauge(KN, L("llama-0"), "0.2 0.5 0.95x19"),
   "checks": [{"at": "4m", "alert": "VLLMKVCacheNearFull"},
              {"at": "12m", "alert": "VLLMKVCacheNearFull", "fire": [(A("llama-0"), 0.95)]}]},
  {"name": "old name (gpu_cache_usage_perc) at 95%: fires",
   "interval": "1m",
   "series": gauge(KO, L("llama-old-0", model="llama-2-7b"), "0.95x20"),
   "checks": [{"at": "12m", "alert": "VLLMKVCacheNearFull", "fire": [(A("llama-old-0", model="llama-2-7b"), 0.95)]}]},
  {"name": "mixed fleet: a pod exporting both names fires once (current name wins), old-only and new-only pods fire, healthy ones do not",
   "interval": "1m",
   "series": gauge(KN, L("both-0"), "0.96x20") + gauge(KO, L("both-0"), "0.93x20")
           + gauge(KO, L("old-0", ip="10.0.0.2"), "0.92x20") + gauge(KN, L("new-0", ip="10.0.0.3"), "0.97x20")
           + gauge(KN, L("ok-0", ip="10.0.0.4"), "0.6x20") + gauge(KO, L("ok-0", ip="10.0.0.4"), "0.6x20")
           + gauge(KO, L("ok-1", ip="10.0.0.5"), "0.4x20"),
   "checks": [{"at": "12m", "alert": "VLLMKVCacheNearFull",
               "fire": [(A("both-0"), 0.96), (A("new-0"), 0.97), (A("old-0"), 0.92)]}]},
  {"name": "data-parallel engines: the fullest engine of the pod decides",
   "interval": "1m",
   "series": gauge(KN, L("llama-0"), "0.5x20") + gauge(KN, L("llama-0", engine="1"), "0.98x20"),
   "checks": [{"at": "12m", "alert": "VLLMKVCacheNearFull", "fire": [(A("llama-0"), 0.98)]}]},
  {"name": "usage oscillating 1.0/0.88 (requests finishing) stays firing thanks to the 2m average",
   "interval": "1m",
   "series": gauge(KN, L("llama-0"), alt),
   "checks": [{"at": "12m", "alert": "VLLMKVCacheNearFull", "fire": [(A("llama-0"), (1 + 0.88 + 1) / 3)]}]},
  {"name": "exactly at the threshold (0.9) and an idle model (0) do not fire",
   "interval": "1m",
   "series": gauge(KN, L("llama-0"), "0.9x20") + gauge(KO, L("idle-0", ip="10.0.0.2"), "0x20"),
   "checks": [{"at": "12m", "alert": "VLLMKVCacheNearFull"}]},
]}

# ---- abort ----
RS = "vllm:request_success_total"
def finishes(labels, stop, length, abort, error=None, start=0):
    out = [(f'{RS}{{{lbl(labels)}, finished_reason="stop"}}', f"{start}+{stop}x{N}"),
           (f'{RS}{{{lbl(labels)}, finished_reason="length"}}', f"{start}+{length}x{N}")]
    if abort is not None:
        out.append((f'{RS}{{{lbl(labels)}, finished_reason="abort"}}', f"{start}+{abort}x{N}"))
    if error is not None:
        out.append((f'{RS}{{{lbl(labels)}, finished_reason="error"}}', f"{start}+{error}x{N}"))
    return out
TC, EC, RUN = "vllm:time_to_first_token_seconds_count", "vllm:e2e_request_latency_seconds_count", "vllm:num_requests_running"
AN = 30  # steps of the abort tests: for: 10m needs room
def v(x):
    return x if isinstance(x, str) else f"0+{x}x{AN}"
def lifecycle(labels, first_tokens, finishes, running=f"12x{AN}", counted_aborts=None):
    """Requests that got a first token (TTFT _count), finished requests (e2e _count), the running batch
    and the aborts vLLM counts. A client abort is a first token without a finish (vLLM V1 never counts
    client disconnects as finished); per-step ints or promtool value strings."""
    out = [(f"{TC}{{{lbl(labels)}}}", v(first_tokens)), (f"{EC}{{{lbl(labels)}}}", v(finishes)),
           (f"{RUN}{{{lbl(labels)}}}", running)]
    for r in ["stop", "length", "error", "repetition"]:
        out.append((f'{RS}{{{lbl(labels)}, finished_reason="{r}"}}', f"0+0x{AN}" if r != "stop" else v(finishes)))
    out.append((f'{RS}{{{lbl(labels)}, finished_reason="abort"}}', v(counted_aborts or 0)))
    return out

abort = {"eval_interval": "1m", "tests": [
  {"name": "30% of the requests that got a first token never finish at 10 req/s, the abort counter at 0 (client disconnects): fires after for: 10m, not before",
   "interval": "1m",
   "series": lifecycle(L("llama-0"), 300, 210) + lifecycle(L("llama-0", engine="1"), 300, 210),
   "checks": [{"at": "4m", "alert": "VLLMRequestAbortRateHigh"}, {"at": "9m", "alert": "VLLMRequestAbortRateHigh"},
              {"at": "12m", "alert": "VLLMRequestAbortRateHigh", "fire": [(A("llama-0"), 0.3)]}]},
  {"name": "engine-side aborts the counter does see (finished, so in e2e too) count as well",
   "interval": "1m",
   "series": lifecycle(L("llama-0"), 600, 600, counted_aborts=60),
   "checks": [{"at": "12m", "alert": "VLLMRequestAbortRateHigh", "fire": [(A("llama-0"), 0.1)]}]},
  {"name": "long generations (12 minutes) ramping up from idle: first tokens outrun finishes by the running batch's growth for 12 minutes, no abort: no alert",
   "interval": "1m",
   "series": lifecycle(L("llama-0"), 600, "0x12 600+600x17", running="0+600x12 7200x17"),
   "checks": [{"at": f"{m}m", "alert": "VLLMRequestAbortRateHigh"} for m in (3, 8, 11, 12, 13, 14, 16, 20)]},
  {"name": "a pod restart losing 500 requests in flight at once is one window of unfinished requests, not a persisting share: no alert",
   "interval": "1m",
   "series": lifecycle(L("llama-0"), "0+600x10 0+600x19", "0+600x10 0 100 700+600x17", running="500x10 0 500x18"),
   "checks": [{"at": f"{m}m", "alert": "VLLMRequestAbortRateHigh"} for m in (11, 14, 16, 20, 25)]},
  {"name": "nearly idle model (3 first tokens/min, 1 never finished) is under the minimum rate: no alert",
   "interval": "1m",
   "series": lifecycle(L("llama-0"), 3, 2, running="1x20"),
   "checks": [{"at": "12m", "alert": "VLLMRequestAbortRateHigh"}]},
  {"name": "no traffic at all (0/0 share) does not fire",
   "interval": "1m",
   "series": lifecycle(L("llama-0"), "500+0x20", "500+0x20", running="0x20"),
   "checks": [{"at": "12m", "alert": "VLLMRequestAbortRateHigh"}]},
  {"name": "2% never finished, and a model without an abort series, do not fire",
   "interval": "1m",
   "series": lifecycle(L("llama-0"), 600, 588)
           + [(s_, v_) for s_, v_ in lifecycle(L("mistral-0", model="mistral-7b", ip="10.0.0.2"), 600, 600) if "abort" not in s_],
   "checks": [{"at": "12m", "alert": "VLLMRequestAbortRateHigh"}]},
  {"name": "two models on one pod are judged separately",
   "interval": "1m",
   "series": lifecycle(L("multi-0"), 600, 480) + lifecycle(L("multi-0", model="mistral-7b"), 600, 600),
   "checks": [{"at": "12m", "alert": "VLLMRequestAbortRateHigh", "fire": [(A("multi-0"), 0.2)]}]},
]}

# ---- queue ----
QW = "vllm:num_requests_waiting"
QWR = "vllm:num_requests_waiting_by_reason"
queue = {"eval_interval": "1m", "tests": [
  {"name": "60 waiting: fires after for: 5m, not before",
   "interval": "1m",
   "series": gauge(QW, L("llama-0"), "0 10 60x19"),
   "checks": [{"at": "4m", "alert": "VLLMQueueDepthHigh"},
              {"at": "12m", "alert": "VLLMQueueDepthHigh", "fire": [(A("llama-0"), 60)]}]},
  {"name": "two data-parallel engines with 30 each sum to 60 per pod: fires",
   "interval": "1m",
   "series": gauge(QW, L("llama-0"), "30x20") + gauge(QW, L("llama-0", engine="1"), "30x20"),
   "checks": [{"at": "12m", "alert": "VLLMQueueDepthHigh", "fire": [(A("llama-0"), 60)]}]},
  {"name": "40 waiting, an idle model, and a 3-minute burst of 80 do not fire",
   "interval": "1m",
   "series": gauge(QW, L("llama-0"), "40x20") + gauge(QW, L("idle-0", ip="10.0.0.2"), "0x20")
           + gauge(QW, L("burst-0", ip="10.0.0.3"), "10 10 80 80 80 10x15"),
   "checks": [{"at": "4m", "alert": "VLLMQueueDepthHigh"}, {"at": "5m", "alert": "VLLMQueueDepthHigh"},
              {"at": "6m", "alert": "VLLMQueueDepthHigh"},
              {"at": "8m", "alert": "VLLMQueueDepthHigh"}, {"at": "12m", "alert": "VLLMQueueDepthHigh"}]},
  {"name": "where vLLM splits the queue only the capacity part counts: 60 waiting, 55 of them deferred (KV transfers, LoRA slots), do not fire; 70 waiting, 60 of them for capacity, fire with 60 (and the pods of the first cases, without the split, keep today's reading)",
   "interval": "1m",
   "series": gauge(QW, L("deferred-0"), "60x20") + gauge(QWR, {**L("deferred-0"), "reason": "capacity"}, "5x20")
           + gauge(QWR, {**L("deferred-0"), "reason": "deferred"}, "55x20")
           + gauge(QW, L("capacity-0", ip="10.0.0.2"), "70x20") + gauge(QWR, {**L("capacity-0", ip="10.0.0.2"), "reason": "capacity"}, "60x20")
           + gauge(QWR, {**L("capacity-0", ip="10.0.0.2"), "reason": "deferred"}, "10x20"),
   "checks": [{"at": "12m", "alert": "VLLMQueueDepthHigh", "fire": [(A("capacity-0"), 60)]}]},
]}

# stall.yml, spec_decode.yml and kv_transfer.yml are written by hand, and kv_cache.yml was edited
# by hand since (its oscillating case for Prometheus 3): regenerate only what you changed.
import sys
only = set(sys.argv[1:])
for name, cases in [("ttft", ttft), ("itl", itl), ("kv_cache", kv), ("abort", abort), ("queue", queue)]:
    if only and name not in only:
        continue
    open(f"{D}/tests/{name}.yml", "w").write(emit(f"{D}/vllm-alerts.rules.yml", "../vllm-alerts.rules.yml", cases, HDR % name) + "\n")

# ---- fast profile: one firing and one quiet case per alert, 5s steps ----
FN = 24
def fhist(metric, labels, buckets, cdf, per_step, mean):
    return hist(metric, labels, buckets, cdf, per_step, FN, mean)
def ffin(labels, finishes):
    """finishes per 5s step; against the TTFT histogram's first tokens, the gap is client aborts
    (never counted as finished)"""
    return [(f"{EC}{{{lbl(labels)}}}", f"0+{finishes}x{FN}"),
            (f"{RUN}{{{lbl(labels)}}}", f"10x{FN}"),
            (f'{RS}{{{lbl(labels)}, finished_reason="stop"}}', f"0+{finishes}x{FN}"),
            (f'{RS}{{{lbl(labels)}, finished_reason="abort"}}', f"0+0x{FN}")]
TTFT_FAST_SLOW = [(0.5, .2), (1, .5), (2.5, .98), (5, 1.0)]   # p99 3.75s
fast = {"eval_interval": "5s", "tests": [
  {"name": "every alert fires within a minute on a struggling pod (current names) and stays quiet on a healthy one (old names)",
   "interval": "5s",
   "series": fhist(M, L("sim-0", model="sim"), TTFT, TTFT_FAST_SLOW, 50, 1.2) + fhist(M, L("sim-1", model="sim", ip="10.0.0.2"), TTFT, TTFT_OK, 50, 0.3)
           + fhist(MN, L("sim-0", model="sim"), ITL, ITL_SLOW, 500, 0.12) + fhist(MO, L("sim-1", model="sim", ip="10.0.0.2"), TPOT_OLD, ITL_OK, 500, 0.05)
           + gauge(KN, L("sim-0", model="sim"), "0.95x24") + gauge(KO, L("sim-1", model="sim", ip="10.0.0.2"), "0.5x24")
           + ffin(L("sim-0", model="sim"), 45) + ffin(L("sim-1", model="sim", ip="10.0.0.2"), 50)
           + gauge(QW, L("sim-0", model="sim"), "30x24") + gauge(QW, L("sim-1", model="sim", ip="10.0.0.2"), "5x24"),
   "checks": [{"at": "10s", "alert": a} for a in ["VLLMTimeToFirstTokenP99High", "VLLMInterTokenLatencyP99High", "VLLMKVCacheNearFull", "VLLMRequestAbortRateHigh", "VLLMQueueDepthHigh"]]
            + [{"at": "60s", "alert": "VLLMTimeToFirstTokenP99High", "fire": [(A("sim-0", model="sim"), 3.75)]},
               {"at": "60s", "alert": "VLLMInterTokenLatencyP99High", "fire": [(A("sim-0", model="sim"), 0.625)]},
               {"at": "60s", "alert": "VLLMKVCacheNearFull", "fire": [(A("sim-0", model="sim"), 0.95)]},
               {"at": "100s", "alert": "VLLMRequestAbortRateHigh", "fire": [(A("sim-0", model="sim"), 0.1)]},
               {"at": "60s", "alert": "VLLMQueueDepthHigh", "fire": [(A("sim-0", model="sim"), 30)]}]},
  {"name": "idle pod: nothing fires",
   "interval": "5s",
   "series": flat_hist(M, L("sim-0", model="sim"), TTFT, FN) + flat_hist(MN, L("sim-0", model="sim"), ITL, FN)
           + gauge(KN, L("sim-0", model="sim"), "0x24") + ffin(L("sim-0", model="sim"), 0) + gauge(QW, L("sim-0", model="sim"), "0x24"),
   "checks": [{"at": "60s", "alert": a} for a in ["VLLMTimeToFirstTokenP99High", "VLLMInterTokenLatencyP99High", "VLLMKVCacheNearFull", "VLLMRequestAbortRateHigh", "VLLMQueueDepthHigh"]]},
]}
FHDR = """# promtool unit tests for the fast profile (vllm-alerts.fast.rules.yml: 30s windows, for: 15s), as used by
# the demo and end-to-end tests. Same alert expressions as production. Run: deploy/prometheus/test.sh
"""
if not only or "fast" in only:
    open(f"{D}/tests/fast/fast.yml", "w").write(emit(f"{D}/vllm-alerts.fast.rules.yml", "../../vllm-alerts.fast.rules.yml", fast, FHDR) + "\n")
