package testenv

import (
	"testing"
	"time"
)

// AMServer is a real Alertmanager started for a test.
type AMServer struct {
	URL  string
	Addr string
	Proc *Process
}

// Alertmanager starts a real Alertmanager with config (YAML) on a loopback port, without
// clustering, and waits until it is ready.
func Alertmanager(t testing.TB, config string) *AMServer {
	t.Helper()
	bin := Binary(t, "prometheus-alertmanager", "alertmanager")
	dir := t.TempDir()
	cfg := writeFile(t, dir, "alertmanager.yml", config)
	port := FreePort(t)
	a := &AMServer{URL: "http://" + addr(port), Addr: addr(port)}
	a.Proc = Start(t, "alertmanager", bin,
		"--config.file="+cfg,
		"--storage.path="+dir,
		"--web.listen-address="+addr(port),
		"--cluster.listen-address=",
	)
	WaitFor(t, 30*time.Second, "alertmanager to be ready", func() bool { return httpOK(a.URL + "/-/ready") })
	return a
}
