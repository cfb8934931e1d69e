package handlers

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startTestServer serves NewServer's http.Server, its timeouts shortened by shorten, on a
// loopback port.
func startTestServer(t *testing.T, shorten func(*http.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &Webhook{Acceptor: &recorder{}}
	srv := NewServer(ln.Addr().String(), NewMux(Routes{Webhook: h}))
	shorten(srv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// trickle writes s one byte every gap until the server closes the connection (or s runs out),
// and returns how long the server put up with it.
func trickle(t *testing.T, c net.Conn, s string, gap time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		// The server either answers (408/400) and closes, or just closes: both end the read.
		_, _ = io.Copy(io.Discard, c)
		close(closed)
	}()
	for i := 0; i < len(s); i++ {
		select {
		case <-closed:
			return time.Since(start)
		case <-time.After(gap):
		}
		if _, err := c.Write([]byte{s[i]}); err != nil {
			return time.Since(start)
		}
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never cut the slow client off")
	}
	return time.Since(start)
}

// A slow-loris client (headers sent a byte at a time) is cut off by ReadHeaderTimeout; one that
// sends its headers and then trickles the body is cut off by ReadTimeout. Neither holds a
// connection for longer than the server allows.
func TestSlowClientsAreCutOffByTheServerTimeouts(t *testing.T) {
	srv := NewServer("", nil)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Fatalf("NewServer leaves a timeout or limit unset: %+v", srv)
	}

	t.Run("headers byte by byte", func(t *testing.T) {
		addr := startTestServer(t, func(s *http.Server) { s.ReadHeaderTimeout = 300 * time.Millisecond })
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := "POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Padding: " + strings.Repeat("a", 200) + "\r\n\r\n"
		took := trickle(t, c, req, 20*time.Millisecond)
		if took > 2*time.Second {
			t.Fatalf("slow headers held the connection %s (ReadHeaderTimeout 300ms)", took)
		}
	})

	t.Run("body byte by byte", func(t *testing.T) {
		addr := startTestServer(t, func(s *http.Server) { s.ReadTimeout = 500 * time.Millisecond })
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		body := strings.Repeat(" ", 500) + "{}"
		head := "POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
		if _, err := c.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		took := trickle(t, c, body, 20*time.Millisecond)
		if took > 3*time.Second {
			t.Fatalf("a slow body held the connection %s (ReadTimeout 500ms)", took)
		}
	})

	t.Run("a prompt client is served", func(t *testing.T) {
		addr := startTestServer(t, func(s *http.Server) { s.ReadHeaderTimeout = 300 * time.Millisecond })
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if resp == nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v", resp)
		}
		resp.Body.Close()
	})
}
