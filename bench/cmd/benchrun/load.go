package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ingestPayload is a realistic Alertmanager webhook (version 4): one group of 5 TTFT alerts on 5
// pods of one model. Every request gets its own sequence number, so fingerprints and startsAt
// differ and each alert is a new state to the responder (dedup claim, queue).
type ingestPayload struct {
	parts [][]byte // the template split at the marks
	marks []byte   // which mark ends each part: tsMark, fpMark or idMark
	seq   atomic.Int64
	// resend makes every request the same group again (Alertmanager's re-sends every
	// group_interval): all its alerts are duplicates, answered without a new diagnosis.
	resend bool
	// distinct makes every request a group of its own, on pods of its own: no alert is another's
	// newer state, so each is diagnosed (13 queries, for series Prometheus does not have).
	distinct bool
}

// The marks in the template: startsAt, fingerprint, and a suffix of the group key and pod names
// (empty unless distinct).
const (
	tsMark = 't'
	fpMark = 'f'
	idMark = 'i'
)

var markRE = regexp.MustCompile(`@(TS|FP|ID)@`)

func newIngestPayload() *ingestPayload {
	pods := []string{"vllm-capacity", "vllm-kv", "vllm-prefill", "vllm-decode", "vllm-aborts"}
	var b bytes.Buffer
	b.WriteString(`{"version":"4","groupKey":"{}/{severity=\"critical\"}:{alertname=\"VLLMTimeToFirstTokenP99High\", model_name=\"llama\", namespace=\"llm\"}@ID@",` +
		`"truncatedAlerts":0,"status":"firing","receiver":"vllm-responder",` +
		`"groupLabels":{"alertname":"VLLMTimeToFirstTokenP99High","model_name":"llama","namespace":"llm"},` +
		`"commonLabels":{"alertname":"VLLMTimeToFirstTokenP99High","model_name":"llama","namespace":"llm","severity":"critical"},` +
		`"commonAnnotations":{"summary":"vLLM time to first token p99 is high"},` +
		`"externalURL":"http://alertmanager.example:9093","alerts":[`)
	for i, pod := range pods {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"status":"firing","labels":{"alertname":"VLLMTimeToFirstTokenP99High","model_name":"llama","namespace":"llm","pod":"%s@ID@","severity":"critical","job":"vllm","instance":"10.0.0.%d:8000"},`+
			`"annotations":{"summary":"TTFT p99 above 2s on %s","description":"p99 time to first token has been above 2s for 5 minutes.","runbook_url":"https://runbooks.example/vllm/ttft"},`+
			`"startsAt":"2026-11-29T10:@TS@.%03dZ","endsAt":"0001-01-01T00:00:00Z",`+
			`"generatorURL":"http://prometheus.example:9090/graph?g0.expr=histogram_quantile%%280.99%%2C+sum+by+%%28le%%29+%%28rate%%28vllm%%3Atime_to_first_token_seconds_bucket%%5B5m%%5D%%29%%29%%29+%%3E+2&g0.tab=1",`+
			`"fingerprint":"@FP@%d"}`, pod, i+1, pod, i, i)
	}
	b.WriteString(`]}`)
	tmpl := b.Bytes()
	p := &ingestPayload{}
	last := 0
	for _, m := range markRE.FindAllSubmatchIndex(tmpl, -1) {
		p.parts = append(p.parts, tmpl[last:m[0]])
		p.marks = append(p.marks, map[string]byte{"TS": tsMark, "FP": fpMark, "ID": idMark}[string(tmpl[m[2]:m[3]])])
		last = m[1]
	}
	p.parts = append(p.parts, tmpl[last:])
	return p
}

// next returns a body with a fresh sequence number: distinct fingerprints and startsAt.
func (p *ingestPayload) next() []byte {
	n := int64(1)
	if !p.resend {
		n = p.seq.Add(1)
	}
	// startsAt minutes:seconds from the sequence (always a valid time), fingerprint a hex counter.
	ts := fmt.Sprintf("%02d:%02d", (n/60)%60, n%60)
	fp := strconv.FormatInt(n, 16) + "x"
	id := ""
	if p.distinct {
		id = "-" + strconv.FormatInt(n, 10)
	}
	var b bytes.Buffer
	b.Grow(4096)
	for i, part := range p.parts {
		b.Write(part)
		if i == len(p.marks) {
			break
		}
		switch p.marks[i] {
		case tsMark:
			b.WriteString(ts)
		case fpMark:
			b.WriteString(fp)
		case idMark:
			b.WriteString(id)
		}
	}
	return b.Bytes()
}

// loadResult is one run of the load generator against one target.
type loadResult struct {
	ok, unavailable, other int
	elapsed                time.Duration
	lat                    []time.Duration // successful requests only
}

func (r *loadResult) add(o loadResult) {
	r.ok += o.ok
	r.unavailable += o.unavailable
	r.other += o.other
	r.elapsed += o.elapsed
	r.lat = append(r.lat, o.lat...)
}

func (r *loadResult) rps() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

func newLoadClient(conns int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: 30 * time.Second,
		DisableCompression: true,
	}}
}

func post(c *http.Client, url string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// closedLoop keeps conns requests in flight for d: throughput.
func closedLoop(url string, p *ingestPayload, conns int, d time.Duration) loadResult {
	c := newLoadClient(conns)
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var res loadResult
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local loadResult
			for ctx.Err() == nil {
				body := p.next()
				t0 := time.Now()
				code, err := post(c, url, body)
				switch {
				case err == nil && code == http.StatusOK:
					local.ok++
					local.lat = append(local.lat, time.Since(t0))
				case err == nil && code == http.StatusServiceUnavailable:
					local.unavailable++
				default:
					local.other++
				}
			}
			mu.Lock()
			res.add(local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// openLoop sends requests at a fixed rate for d, whatever the answers: latency measured from the
// moment each request was due (so a stall counts against every request it delayed).
func openLoop(url string, p *ingestPayload, rate int, d time.Duration) loadResult {
	c := newLoadClient(256)
	defer c.CloseIdleConnections()
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	var mu sync.Mutex
	var res loadResult
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		body := p.next()
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := post(c, url, body)
			lat := time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && code == http.StatusOK:
				res.ok++
				res.lat = append(res.lat, lat)
			case err == nil && code == http.StatusServiceUnavailable:
				res.unavailable++
			default:
				res.other++
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}
