package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// JaegerServer is a real Jaeger v2 all-in-one (memory storage) started for a test.
type JaegerServer struct {
	// URL is the query service's base URL (HTTP API /api/traces and the UI).
	URL string
	// OTLPGRPC is host:port of the OTLP/gRPC receiver; OTLPHTTP the OTLP/HTTP base URL.
	OTLPGRPC string
	OTLPHTTP string
	Proc     *Process
}

// repoRoot is the repository's root directory, found from this file's path.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// JaegerBinary finds the jaeger binary scripts/jaeger.sh builds from the nested module
// tools/jaeger ($JAEGER_BIN overrides), or fails the test saying how to build it.
func JaegerBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("JAEGER_BIN"); p != "" {
		return p
	}
	version, err := jaegerVersion()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache directory for jaeger: %v", err)
	}
	p := filepath.Join(cache, "vllm-responder", "jaeger-"+version, "jaeger")
	if !fileExists(p) {
		t.Fatalf("%s not found: run scripts/jaeger.sh (make test runs it; the first build takes a few minutes) or set JAEGER_BIN", p)
	}
	return p
}

// jaegerVersion is the version tools/jaeger/go.mod pins (the cache directory's name).
func jaegerVersion() (string, error) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "tools", "jaeger", "go.mod"))
	if err != nil {
		return "", fmt.Errorf("jaeger version: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "github.com/jaegertracing/jaeger" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("tools/jaeger/go.mod does not require github.com/jaegertracing/jaeger")
}

// Jaeger starts a real Jaeger (tools/jaeger/config.yaml: OTLP receivers, memory storage, query
// service) on loopback ports of its own and waits until both the query API and the OTLP
// receivers answer.
func Jaeger(t testing.TB) *JaegerServer {
	t.Helper()
	bin := JaegerBinary(t)
	query, grpcQuery, otlpGRPC, otlpHTTP := addr(FreePort(t)), addr(FreePort(t)), addr(FreePort(t)), addr(FreePort(t))
	env := []string{
		"JAEGER_QUERY_HTTP=" + query, "JAEGER_QUERY_GRPC=" + grpcQuery,
		"JAEGER_OTLP_GRPC=" + otlpGRPC, "JAEGER_OTLP_HTTP=" + otlpHTTP, "JAEGER_LOG_LEVEL=info",
	}
	p := StartEnv(t, "jaeger", bin, env, "--config", filepath.Join(repoRoot(), "tools", "jaeger", "config.yaml"))
	s := &JaegerServer{URL: "http://" + query, OTLPGRPC: otlpGRPC, OTLPHTTP: "http://" + otlpHTTP, Proc: p}
	WaitFor(t, 120*time.Second, "jaeger to serve its query API and OTLP receivers", func() bool {
		return httpOK(s.URL+"/api/services") && dialOK(otlpGRPC) && dialOK(otlpHTTP)
	})
	return s
}

func dialOK(hostport string) bool {
	c, err := net.DialTimeout("tcp", hostport, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
