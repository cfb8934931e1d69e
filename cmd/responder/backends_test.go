package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 (its own CA) and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "prometheus-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

type basicAuthRT struct {
	user, pass string
	next       http.RoundTripper
}

func (b basicAuthRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.pass)
	return b.next.RoundTrip(r)
}

// securePrometheus starts a real Prometheus behind TLS and basic auth (its own
// --web.config.file), scraping vllm-sim as pod vllm-0.
func securePrometheus(t *testing.T, user, pass string) (prom *testenv.PromServer, caFile string, pool *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	vllm := startSim(t)
	client := &http.Client{Transport: basicAuthRT{user, pass, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	prom = testenv.Prometheus(t, testenv.PromOptions{
		ScrapeTargets: []testenv.Target{{Addr: strings.TrimPrefix(vllm.URL, "http://"), Labels: map[string]string{"namespace": "llm", "pod": "vllm-0"}}},
		WebConfig: fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  %s: %q\n",
			certFile, keyFile, user, string(hash)),
		Client: client,
	})
	if !strings.HasPrefix(prom.URL, "https://") {
		t.Fatalf("Prometheus is not behind TLS: %s", prom.URL)
	}
	testenv.WaitFor(t, 60*time.Second, "Prometheus to scrape vllm-sim", func() bool {
		r, err := client.Get(prom.URL + "/api/v1/query?query=" + url.QueryEscape(`vllm:num_requests_running{pod="vllm-0"}`))
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return strings.Contains(string(b), `"pod":"vllm-0"`)
	})
	return prom, certFile, pool
}

func writeFileT(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func rawConfig(t *testing.T, body string) string {
	t.Helper()
	return writeFileT(t, "config.yaml", "log: {level: error}\n"+body)
}

// TestPrometheusBehindTLSAndBasicAuth: the prometheus section takes prometheus/common's HTTP
// client configuration; a real Prometheus with --web.config.file (TLS, bcrypt basic auth) is
// queried with basic_auth.password_file and tls_config.ca_file, and refuses a wrong password.
func TestPrometheusBehindTLSAndBasicAuth(t *testing.T) {
	t.Parallel()
	prom, caFile, _ := securePrometheus(t, "responder", "s3cret-pw")
	cfg := rawConfig(t, fmt.Sprintf("prometheus:\n  url: %s\n  basic_auth: {username: responder, password_file: %s}\n  tls_config: {ca_file: %s}\n",
		prom.URL, writeFileT(t, "pw", "s3cret-pw\n"), caFile))
	res, stderr, code := triageCLI(t, "--config", cfg, "--label", "pod=vllm-0")
	if code != 0 || res.Verdict != "healthy" {
		t.Fatalf("exit %d, verdict %q: %s", code, res.Verdict, stderr)
	}

	for name, body := range map[string]string{
		"a wrong password": fmt.Sprintf("prometheus:\n  url: %s\n  basic_auth: {username: responder, password: wrong}\n  tls_config: {ca_file: %s}\n", prom.URL, caFile),
		"no CA":            fmt.Sprintf("prometheus:\n  url: %s\n  basic_auth: {username: responder, password: s3cret-pw}\n", prom.URL),
	} {
		_, stderr, code := triageCLI(t, "--config", rawConfig(t, body), "--label", "pod=vllm-0")
		if code == 0 || strings.Contains(stderr, "s3cret") || strings.Contains(stderr, "wrong") {
			t.Errorf("%s: exit %d (want non-zero, no secret): %s", name, code, stderr)
		}
	}

	// A password file that is missing fails at load, naming its key.
	_, stderr, code = triageCLI(t, "--config", rawConfig(t, fmt.Sprintf("prometheus:\n  url: %s\n  basic_auth: {username: responder, password_file: /nonexistent/pw}\n", prom.URL)))
	if code == 0 || !strings.Contains(stderr, "prometheus.basic_auth.password_file: open /nonexistent/pw") {
		t.Errorf("missing password file: exit %d: %s", code, stderr)
	}
}

// recordingProxy forwards to the TLS Prometheus and records the X-Scope-OrgID of each request;
// for tenant "partial" it adds the warning Thanos sends with a partial response.
type recordingProxy struct {
	mu      sync.Mutex
	tenants map[string]int
	auth    int
}

func startRecordingProxy(t *testing.T, target string, pool *x509.CertPool) (*httptest.Server, *recordingProxy) {
	t.Helper()
	u, _ := url.Parse(target)
	rec := &recordingProxy{tenants: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Header.Get("X-Scope-OrgID") != "partial" || !strings.HasPrefix(resp.Request.URL.Path, "/api/v1/query") {
			return nil
		}
		var ans map[string]any
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &ans); err != nil {
			return err
		}
		ans["warnings"] = []string{"No StoreAPIs matched for this query: store 10.0.0.7:10901 unavailable (partial response)"}
		b, _ = json.Marshal(ans)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.tenants[r.Header.Get("X-Scope-OrgID")]++
		if _, _, ok := r.BasicAuth(); ok {
			rec.auth++
		}
		rec.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

// TestTenantHeaderArrivesAndPartialAnswersAreMarked: http_headers (X-Scope-OrgID for Mimir or
// Cortex) reach the backend on every query, and an answer with warnings (Thanos'
// partial_response) is marked in the evidence and the notes, not trusted silently.
func TestTenantHeaderArrivesAndPartialAnswersAreMarked(t *testing.T) {
	t.Parallel()
	prom, _, pool := securePrometheus(t, "responder", "pw2")
	proxy, rec := startRecordingProxy(t, prom.URL, pool)
	cfgFor := func(tenant string) string {
		return rawConfig(t, fmt.Sprintf("prometheus:\n  url: %s\n  basic_auth: {username: responder, password: pw2}\n  http_headers:\n    X-Scope-OrgID: {values: [%s]}\n", proxy.URL, tenant))
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"triage", "--output", "json", "--config", cfgFor("tenant-a"), "--label", "pod=vllm-0"}, &out, io.Discard); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	var res struct {
		Verdict  string   `json:"verdict"`
		Notes    []string `json:"notes"`
		Evidence []struct {
			Name     string   `json:"name"`
			Problem  string   `json:"problem"`
			Warnings []string `json:"warnings"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	got, auth, others := rec.tenants["tenant-a"], rec.auth, len(rec.tenants)
	rec.mu.Unlock()
	if got == 0 || others != 1 || auth != got {
		t.Fatalf("tenant header on %d requests, basic auth on %d, tenants seen %d: want every request to carry both", got, auth, others)
	}
	if res.Verdict != "healthy" || strings.Contains(strings.Join(res.Notes, " "), "warnings") {
		t.Fatalf("a full answer: verdict %s, notes %v", res.Verdict, res.Notes)
	}

	out.Reset()
	if code := run(context.Background(), []string{"triage", "--output", "json", "--config", cfgFor("partial"), "--label", "pod=vllm-0"}, &out, io.Discard); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	res.Notes, res.Evidence = nil, nil
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "came back with warnings: the answer may be partial") {
		t.Errorf("no note on the partial answer: %v", res.Notes)
	}
	for _, e := range res.Evidence {
		if len(e.Warnings) != 1 || !strings.Contains(e.Problem, "partial answer, Prometheus warned: No StoreAPIs matched") {
			t.Errorf("%s: warnings %v, problem %q: want the partial answer marked", e.Name, e.Warnings, e.Problem)
		}
	}
}
