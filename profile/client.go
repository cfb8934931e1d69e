package profile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"

	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
	"github.com/vllm-responder/vllm-responder/internal/secret"
)

// vllmClient calls a vLLM server's profiler endpoints.
type vllmClient struct {
	http  *http.Client
	token secret.Secret
}

func newVLLMClient(nets []netip.Prefix, token secret.Secret) *vllmClient {
	return &vllmClient{
		http: &http.Client{
			Transport:     podendpoint.Transport(nets, ErrEndpointNotAllowed),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		token: token,
	}
}

// post calls POST base+path with no body. The deadline is the caller's; when it passes, the
// error wraps context.Cause(ctx).
func (c *vllmClient) post(ctx context.Context, base, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+path, http.NoBody)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if c.token.IsSet() {
		req.Header.Set("Authorization", "Bearer "+c.token.Reveal())
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return fmt.Errorf("POST %s: %w", path, cause)
		}
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap() // drop the URL the *url.Error repeats
		}
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusNotFound:
		return ErrProfilerDisabled
	case resp.StatusCode == http.StatusConflict && path == "/start_profile":
		return ErrProfilerBusy
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("POST %s: %s: refused by a gateway in front of vLLM; check profile.bearer_token", path, resp.Status)
	default:
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
}

// notReached reports whether err proves the request never reached the server (so a start that
// failed this way cannot have left profiling on).
func notReached(err error) bool {
	if errors.Is(err, ErrEndpointNotAllowed) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
