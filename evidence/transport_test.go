package evidence

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

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// TestPrometheusTransportReusesConnectionsUncompressed: a playbook's queries, sent at once and
// again, reuse the connections of the first run (net/http's default pool keeps two), and no
// query asks Prometheus to gzip its answer.
func TestPrometheusTransportReusesConnectionsUncompressed(t *testing.T) {
	t.Parallel()
	const n = 13
	var dials atomic.Int32
	var gzipAsked atomic.Int32
	// A barrier: every query is held until all n of its run are in flight, so each run needs n
	// connections at once.
	var mu sync.Mutex
	arrived, gate := 0, make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "" {
			gzipAsked.Add(1)
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

	client, err := api.NewClient(api.Config{Address: srv.URL, RoundTripper: PrometheusTransport(16)})
	if err != nil {
		t.Fatal(err)
	}
	q := PrometheusQuerier{API: v1.NewAPI(client)}
	// A connection goes back to the pool (or is closed, the pool being full) just after its
	// answer was read: each run waits for all of that before the next starts, so that what the
	// next run dials is what the pool did not keep, not a race with the previous run.
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
		t.Errorf("3 runs of %d concurrent queries opened %d connections; want at most %d (the first run's, reused)", n, got, n)
	}
	if got := gzipAsked.Load(); got != 0 {
		t.Errorf("%d queries sent Accept-Encoding; want none (Prometheus would gzip a one-number answer)", got)
	}
}
