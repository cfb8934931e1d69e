package playbooks

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
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
	for run := 0; run < 3; run++ {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := q.Query(ctx, "vector(1)", time.Now()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	if got := dials.Load(); got > n {
		t.Errorf("3 runs of %d concurrent queries opened %d connections; want at most %d (the first run's, reused)", n, got, n)
	}
	if got := gzipAsked.Load(); got != 0 {
		t.Errorf("%d queries sent Accept-Encoding; want none (Prometheus would gzip a one-number answer)", got)
	}
}
