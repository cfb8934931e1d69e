//go:build realvllm

package realvllm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request is one streamed /v1/completions request with a token-id prompt, so its length is
// exact whatever the tokenizer does.
type Request struct {
	PromptTokens int
	Tokens       []int // the prompt itself, when set (PromptTokens and Seed are then unused)
	Model        string
	Temperature  float64       // 0: greedy
	MaxTokens    int           // generated with ignore_eos, so the request runs to max_tokens
	GiveUpAfter  time.Duration // the client disconnects after this (0: reads to the end)
	GiveUpChunks int           // the client disconnects after this many streamed chunks (0: never)
	Seed         int           // varies the prompt (distinct prompts do not share the prefix cache)
	Traceparent  string        // W3C traceparent header, if set
}

// Model is the served model or LoRA adapter a request names: the Request's, else the server's.
func (s *Server) model(r Request) string {
	if r.Model != "" {
		return r.Model
	}
	return s.Model
}

// Result is what the client saw.
type Result struct {
	Status     int
	Err        error
	GaveUp     bool          // the client disconnected before the end
	FirstToken time.Duration // 0: none came
	Chunks     int           // streamed chunks with text
	Finish     string        // finish_reason of the last chunk
	Elapsed    time.Duration
}

// Prompt is a deterministic token-id prompt of n tokens, different for each seed.
func Prompt(n, seed int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = 3 + (seed*131+i*17+i*i)%500 // ids 3..502: past the special tokens, inside the vocab
	}
	return p
}

// Token ids of the prompts below: past the special tokens (0-2), inside the 512-token vocabulary.
const firstToken, tokenSpan = 3, 500

// RandomPrompt is n token ids drawn uniformly at random (seeded): no n-gram repeats to speak of,
// and no prefix shared with another seed's.
func RandomPrompt(n int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	p := make([]int, n)
	for i := range p {
		p[i] = firstToken + r.IntN(tokenSpan)
	}
	return p
}

// RepetitivePrompt is n token ids that repeat one random motif of period tokens (seeded): every
// n-gram of it recurs, so an n-gram proposer finds a match at each step.
func RepetitivePrompt(n, period int, seed uint64) []int {
	motif := RandomPrompt(period, seed)
	p := make([]int, n)
	for i := range p {
		p[i] = motif[i%period]
	}
	return p
}

// SharedPrefixPrompt is n token ids whose first prefix tokens are the same for every request of
// one prefixSeed (a system prompt), followed by a part unique to seed.
func SharedPrefixPrompt(n, prefix int, prefixSeed, seed uint64) []int {
	return append(RandomPrompt(prefix, prefixSeed), RandomPrompt(n-prefix, seed)...)
}

// Complete runs one request.
func (s *Server) Complete(ctx context.Context, r Request) Result { return s.complete(ctx, r, nil) }

// streamGaps runs one request and calls f with the arrival time of each streamed chunk and the
// time since the previous one.
func (s *Server) streamGaps(ctx context.Context, r Request, f func(at time.Time, gap time.Duration)) Result {
	var last time.Time
	return s.complete(ctx, r, func(at time.Time) {
		if !last.IsZero() {
			f(at, at.Sub(last))
		}
		last = at
	})
}

func (s *Server) complete(ctx context.Context, r Request, onChunk func(time.Time)) Result {
	prompt := r.Tokens
	if prompt == nil {
		prompt = Prompt(r.PromptTokens, r.Seed)
	}
	body, _ := json.Marshal(map[string]any{
		"model": s.model(r), "prompt": prompt, "max_tokens": r.MaxTokens,
		"ignore_eos": true, "stream": true, "temperature": r.Temperature,
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.GiveUpAfter > 0 {
		ctx, cancel = context.WithTimeout(ctx, r.GiveUpAfter)
		defer cancel()
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if r.Traceparent != "" {
		req.Header.Set("traceparent", r.Traceparent)
	}
	t0 := time.Now()
	res := Result{}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		res.Err, res.GaveUp = err, errors.Is(ctx.Err(), context.DeadlineExceeded)
		res.Elapsed = time.Since(t0)
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	if resp.StatusCode != 200 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		res.Err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(b.String()))
		res.Elapsed = time.Since(t0)
		return res
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &chunk) != nil || len(chunk.Choices) == 0 {
			continue
		}
		if res.FirstToken == 0 {
			res.FirstToken = time.Since(t0)
		}
		res.Chunks++
		if onChunk != nil {
			onChunk(time.Now())
		}
		if f := chunk.Choices[0].FinishReason; f != nil {
			res.Finish = *f
		}
		if r.GiveUpChunks > 0 && res.Chunks >= r.GiveUpChunks {
			res.GaveUp = true
			res.Elapsed = time.Since(t0)
			return res // the deferred cancel and Body.Close disconnect mid-stream
		}
	}
	if err := sc.Err(); err != nil {
		res.Err, res.GaveUp = err, errors.Is(ctx.Err(), context.DeadlineExceeded)
	}
	res.Elapsed = time.Since(t0)
	return res
}

// Load sends n requests, one every interval (an open loop: arrivals do not wait for answers),
// at most concurrency at once when it is above 0, and returns when all are answered or ctx ends.
func (s *Server) Load(ctx context.Context, n int, interval time.Duration, concurrency int, gen func(i int) Request) []Result {
	return s.LoadUntil(ctx, nil, n, interval, concurrency, gen)
}

// LoadUntil is Load that also stops sending when stop is closed (the requests already sent run
// on, under ctx, and are waited for): a load bounded by a count, a time (ctx) and an event (the
// alert it was meant to raise has fired). It returns the results of the requests sent.
func (s *Server) LoadUntil(ctx context.Context, stop <-chan struct{}, n int, interval time.Duration, concurrency int, gen func(i int) Request) []Result {
	out := make([]Result, n)
	var wg sync.WaitGroup
	var sem chan struct{}
	if concurrency > 0 {
		sem = make(chan struct{}, concurrency)
	}
	tick := time.NewTicker(max(interval, time.Millisecond))
	defer tick.Stop()
	sent := 0
send:
	for ; sent < n; sent++ {
		if sent > 0 {
			select {
			case <-ctx.Done():
				break send
			case <-stop:
				break send
			case <-tick.C:
			}
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				break send
			case <-stop:
				break send
			}
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			out[i] = s.Complete(ctx, gen(i))
		}(sent)
	}
	wg.Wait()
	return out[:sent]
}
