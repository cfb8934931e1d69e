package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestDeployDocPrometheusBlocksLoad: every `prometheus:` block of docs/deploy.md (Thanos, Mimir,
// VictoriaMetrics, Grafana Cloud, TLS) loads with the responder's own loader, its secret files
// standing in as temporary files, and builds an HTTP client.
func TestDeployDocPrometheusBlocksLoad(t *testing.T) {
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(prometheus:\n.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 5 {
		t.Fatalf("want the Thanos, Mimir, VictoriaMetrics, Grafana Cloud and TLS blocks, found %d", len(blocks))
	}
	dir := t.TempDir()
	files := regexp.MustCompile(`/etc/vllm-responder/[^\s},]+`)
	for i, b := range blocks {
		text := files.ReplaceAllStringFunc(b[1], func(p string) string {
			f := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"))
			content := []byte("x\n")
			if strings.HasSuffix(p, ".crt") {
				content = testCA(t)
			}
			if err := os.WriteFile(f, content, 0o600); err != nil {
				t.Fatal(err)
			}
			return f
		})
		c, err := Parse("deploy.md", []byte(text))
		if err != nil {
			t.Errorf("block %d:\n%s\n%v", i, b[1], err)
			continue
		}
		if _, err := NewHTTPClient("prometheus", c.Prometheus.HTTP); err != nil {
			t.Errorf("block %d: %v", i, err)
		}
	}
}

// TestDeployDocKubernetesBlockLoads: the kubernetes: block of docs/deploy.md loads as written.
func TestDeployDocKubernetesBlockLoads(t *testing.T) {
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```yaml\n(kubernetes:\n.*?)```").FindStringSubmatch(string(doc))
	if block == nil {
		t.Fatal("no kubernetes: block in docs/deploy.md")
	}
	c, err := Parse("deploy.md", []byte(block[1]))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Kubernetes.Enabled || c.Kubernetes.Selector != `job="kube-state-metrics"` {
		t.Fatalf("kubernetes: %+v", c.Kubernetes)
	}
}
