package testenv

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// RedisServer is a redis-server owned by one test; it can be stopped and started again on the
// same port to test what happens while Redis is down.
type RedisServer struct {
	Addr string
	t    testing.TB
	dir  string
	port int
	proc *Process
}

// RedisAddr returns the address of a real Redis for this test: the shared one `make test` started
// (REDIS_ADDR) or, without it, one started for this test. Tests sharing a server must namespace
// their keys (store.NewRedis takes a prefix).
func RedisAddr(t testing.TB) string {
	t.Helper()
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		return a
	}
	return StartRedis(t).Addr
}

// StartRedis starts a redis-server of this test's own, without persistence.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	port := FreePort(t)
	r := &RedisServer{t: t, dir: t.TempDir(), port: port, Addr: addr(port)}
	r.Start()
	return r
}

// Start (re)starts the server on its port and waits until it accepts connections.
func (r *RedisServer) Start() {
	r.t.Helper()
	bin := Binary(r.t, "redis-server")
	args := []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir}
	if r.proc == nil {
		r.proc = Start(r.t, "redis-server", bin, args...)
	} else {
		r.proc.start(r.t, bin, args...)
	}
	WaitFor(r.t, 10*time.Second, "redis-server to accept connections", func() bool {
		c, err := net.DialTimeout("tcp", r.Addr, 200*time.Millisecond)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return false
		}
		buf := make([]byte, 7)
		n, _ := c.Read(buf)
		return string(buf[:n]) == "+PONG\r\n"
	})
}

// Stop stops the server (the test can Start it again).
func (r *RedisServer) Stop() { r.proc.Stop() }

// StartSentinel starts a Redis Sentinel (redis-server --sentinel) monitoring the master at
// masterAddr under the name master, and returns its address.
func StartSentinel(t testing.TB, master, masterAddr string) string {
	t.Helper()
	bin := Binary(t, "redis-server")
	host, mport, err := net.SplitHostPort(masterAddr)
	if err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	dir := t.TempDir()
	conf := writeFile(t, dir, "sentinel.conf", "port "+strconv.Itoa(port)+"\nbind 127.0.0.1\ndir "+dir+
		"\nsentinel monitor "+master+" "+host+" "+mport+" 1\nsentinel down-after-milliseconds "+master+" 1000\n")
	Start(t, "redis-sentinel", bin, conf, "--sentinel")
	a := addr(port)
	WaitFor(t, 10*time.Second, "redis sentinel to accept connections", func() bool {
		c, err := net.DialTimeout("tcp", a, 200*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return a
}
