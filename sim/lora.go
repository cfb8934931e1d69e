package sim

import (
	"strconv"
	"strings"
	"time"
)

// loraView is vLLM 0.32's LoRARequestStates in the API server (vllm/v1/metrics/stats.py): a
// per-adapter count of requests, learnt from the engine's QUEUED, SCHEDULED and PREEMPTED
// events. Those events ride on a request's outputs, and a request has none before its first
// token: its QUEUED and SCHEDULED events arrive together with it, so the API server never sees a
// request waiting. vllm:lora_requests_info's waiting_lora_adapters is therefore empty in vLLM
// 0.32, even while requests wait for a LoRA slot; running_lora_adapters lists the adapters of the
// requests that have had a first token and have not finished, in the order the adapters were
// first counted.
type loraView struct {
	order []string
	count map[string]int
}

func (v *loraView) add(adapter string) {
	if adapter == "" {
		return
	}
	if v.count == nil {
		v.count = map[string]int{}
	}
	if v.count[adapter] == 0 {
		v.order = append(v.order, adapter)
	}
	v.count[adapter]++
}

func (v *loraView) remove(adapter string) {
	if adapter == "" || v.count[adapter] == 0 {
		return
	}
	if v.count[adapter]--; v.count[adapter] == 0 {
		delete(v.count, adapter)
		for i, a := range v.order {
			if a == adapter {
				v.order = append(v.order[:i], v.order[i+1:]...)
				break
			}
		}
	}
}

func (v *loraView) running() string { return strings.Join(v.order, ",") }

// recordLoRA is the API server's record of lora_requests_info with a step's stats: the series
// of the current label set is set to the time of the record. Every label set seen stays in the
// exposition with the time it was last current (prometheus_client never removes a child).
func (e *Engine) recordLoRA(at time.Time) {
	if e.m.loraInfo == nil {
		return
	}
	e.m.loraInfo.WithLabelValues(strconv.Itoa(e.cfg.MaxLoras), "", e.loraView.running()).
		Set(float64(at.UnixNano()) / 1e9)
}

// drawAdapter picks the LoRA adapter a synthetic client asks for ("" for the base model).
func (e *Engine) drawAdapter(s Scenario) string {
	if !e.cfg.EnableLoRA || s.LoRAAdapters == 0 || e.rng.Float64() >= s.LoRAShare {
		return ""
	}
	return loraName(e.cfg, e.rng.IntN(s.LoRAAdapters))
}

// loraName is the i-th adapter's name: --lora-modules's, else lora-<i+1>.
func loraName(cfg Config, i int) string {
	if i < len(cfg.LoRAModules) {
		return cfg.LoRAModules[i]
	}
	return "lora-" + strconv.Itoa(i+1)
}
