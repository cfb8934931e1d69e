//go:build realvllm

package realvllm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request is one streamed /v1/completions request with a token-id prompt, so its length is
// exact whatever the tokenizer does.
type Request struct {
	PromptTokens int
	MaxTokens    int           // generated with ignore_eos, so the request runs to max_tokens
	GiveUpAfter  time.Duration // the client disconnects after this (0: reads to the end)
	GiveUpChunks int           // the client disconnects after this many streamed chunks (0: never)
	Seed         int           // varies the prompt (distinct prompts do not share the prefix cache)
	Traceparent  string        // W3C traceparent header, if set
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
	body, _ := json.Marshal(map[string]any{
		"model": s.Model, "prompt": Prompt(r.PromptTokens, r.Seed), "max_tokens": r.MaxTokens,
		"ignore_eos": true, "stream": true, "temperature": 0,
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
	out := make([]Result, n)
	var wg sync.WaitGroup
	var sem chan struct{}
	if concurrency > 0 {
		sem = make(chan struct{}, concurrency)
	}
	tick := time.NewTicker(max(interval, time.Millisecond))
	defer tick.Stop()
	for i := 0; i < n; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				wg.Wait()
				return out[:i]
			case <-tick.C:
			}
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				wg.Wait()
				return out[:i]
			}
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			out[i] = s.Complete(ctx, gen(i))
		}(i)
	}
	wg.Wait()
	return out
}
