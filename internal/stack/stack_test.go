package stack

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/evidence"
)

// TestPrometheusClientFromHTTPConfigReusesConnectionsUncompressed: the client built from the
// prometheus section (prometheus/common's transport) keeps what evidence.PrometheusTransport
// promised: a playbook's concurrent queries, sent again, reuse the first run's connections, and
// none asks Prometheus to gzip its answer; the configured header is on every request.
func TestPrometheusClientFromHTTPConfigReusesConnectionsUncompressed(t *testing.T) {
	const n = 13
	var dials, gzipAsked, tenant atomic.Int32
	var mu sync.Mutex
	arrived, gate := 0, make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "" {
			gzipAsked.Add(1)
		}
		if r.Header.Get("X-Scope-OrgID") == "t1" {
			tenant.Add(1)
		}
		mu.Lock()
		g := gate
		if arrived++; arrived == n {
			close(gate)
			arrived, gate = 0, make(chan struct{})
		}
		mu.Unlock()
		select {
		case <-g:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c, err := config.Parse("c.yaml", []byte("prometheus: {url: "+srv.URL+", http_headers: {X-Scope-OrgID: {values: [t1]}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	api, err := newPrometheusAPI(c)
	if err != nil {
		t.Fatal(err)
	}
	q := evidence.PrometheusQuerier{API: api}
	var returned atomic.Int32
	trace := &httptrace.ClientTrace{PutIdleConn: func(error) { returned.Add(1) }}
	for run := int32(1); run <= 3; run++ {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(httptrace.WithClientTrace(context.Background(), trace), 10*time.Second)
				defer cancel()
				if _, err := q.Query(ctx, "vector(1)", time.Now()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for deadline := time.Now().Add(10 * time.Second); returned.Load() < run*n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	if got := dials.Load(); got > n {
		t.Errorf("3 runs of %d concurrent queries opened %d connections; want at most %d", n, got, n)
	}
	if got := gzipAsked.Load(); got != 0 {
		t.Errorf("%d queries sent Accept-Encoding; want none", got)
	}
	if got := tenant.Load(); got != 3*n {
		t.Errorf("X-Scope-OrgID on %d of %d requests", got, 3*n)
	}
}
