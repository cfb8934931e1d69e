package slack

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"text/template"
	"time"
)

// linkData is what the URL templates see. Every string is already query-escaped.
type linkData struct {
	Model, Pod, Namespace, Alertname string
	Labels                           map[string]string
	From, To                         string
	FromMS, ToMS                     int64
	FromUS, ToUS                     int64
	FromUnix, ToUnix                 int64
}

func newLinkData(labels map[string]string, from, to time.Time) linkData {
	esc := make(map[string]string, len(labels))
	for k, v := range labels {
		esc[k] = url.QueryEscape(v)
	}
	return linkData{
		Model:     esc["model_name"],
		Pod:       esc["pod"],
		Namespace: esc["namespace"],
		Alertname: esc["alertname"],
		Labels:    esc,
		From:      url.QueryEscape(from.UTC().Format(time.RFC3339)),
		To:        url.QueryEscape(to.UTC().Format(time.RFC3339)),
		FromMS:    from.UnixMilli(), ToMS: to.UnixMilli(),
		FromUS: from.UnixMicro(), ToUS: to.UnixMicro(),
		FromUnix: from.Unix(), ToUnix: to.Unix(),
	}
}

func sampleLinkData() linkData {
	t := time.Unix(1700000000, 0)
	return newLinkData(map[string]string{"model_name": "m", "pod": "p", "namespace": "n", "alertname": "a"}, t.Add(-time.Hour), t)
}

// renderURL executes a URL template and checks that the result is an absolute http(s) URL.
func renderURL(t *template.Template, d linkData) (string, error) {
	if t == nil {
		return "", nil
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	u, err := url.Parse(b.String())
	if err != nil {
		return "", fmt.Errorf("result is not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("result %s is not an absolute http(s) URL", strconv.Quote(b.String()))
	}
	return b.String(), nil
}
