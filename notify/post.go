package notify

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/secret"
)

// The one POST of the notifiers that deliver to a URL (Teams, the signed webhooks): a deadline
// per attempt, the answer classified for the retry loop (Retry), never retried here.

// maxErrorBody bounds how much of a failed answer's body an error quotes.
const maxErrorBody = 256

// HTTPError is a POST answered with a status other than 2xx.
type HTTPError struct {
	Status int
	// Body is the start of the answer's body, for the log.
	Body string
	// Wait is the Retry-After the peer sent with a 429 or 503 (0: none).
	Wait time.Duration
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("HTTP %d", e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// RetryAfter implements RetryAfterer: the peer's Retry-After, when it sent one.
func (e *HTTPError) RetryAfter() (time.Duration, bool) { return e.Wait, e.Wait > 0 }

// Retryable says whether another attempt can help: a rate limit (429), a timeout (408) or a
// server error (5xx). Any other 4xx is a request the peer will never accept.
func (e *HTTPError) Retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
}

// PostJSON POSTs body as JSON to target with the extra headers, within timeout, and returns
// (retry, err) as a Notifier does: a transport failure or a retryable status (HTTPError.Retryable)
// is worth another attempt, with the peer's Retry-After when it gave one. The error names the
// target only by scheme and host: a webhook URL may carry its credential in the path or query.
func PostJSON(ctx context.Context, client *http.Client, target string, body []byte, header http.Header, timeout time.Duration) (bool, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errors.New("request timeout"))
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("POST %s: %w", hostOf(target), redact(err, target))
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		return true, fmt.Errorf("POST %s: %w", hostOf(target), redact(err, target))
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	he := &HTTPError{Status: resp.StatusCode, Body: strings.TrimSpace(string(head))}
	if resp.StatusCode/100 == 3 {
		// A redirect the client did not follow (a signed webhook's to another host).
		to := "nowhere"
		if loc, err := resp.Location(); err == nil {
			to = secret.Host(loc.String())
		}
		he.Body = "redirect to " + to + " not followed"
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		he.Wait = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return he.Retryable(), fmt.Errorf("POST %s: %w", hostOf(target), he)
}

// parseRetryAfter reads Retry-After: delay seconds or an HTTP date (0 when absent or unreadable).
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// hostOf is the scheme and host of a URL, what errors and logs may show of it (secret.Host).
func hostOf(target string) string { return cmp.Or(secret.Host(target), "(unparsable URL)") }

// redact removes target from an error's text (net/http quotes the whole URL in its errors).
func redact(err error, target string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s", strings.ReplaceAll(ue.Err.Error(), target, hostOf(target)))
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), target, hostOf(target)))
}
