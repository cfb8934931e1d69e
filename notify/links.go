package notify

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"text/template"
	"time"
)

// LinkTemplate is a link every alert gets from the configuration (Slack's Grafana and traces
// templates): its title and its URL template, compiled once by ParseURLTemplate.
type LinkTemplate struct {
	Title    string
	Template *template.Template
}

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

// ParseURLTemplate compiles a link's URL template ("" is no template: nil) and executes it once
// with sample data, so that a reference to an unknown field or a result that is not an absolute
// http(s) URL fails when the configuration loads.
func ParseURLTemplate(name, text string) (*template.Template, error) {
	if text == "" {
		return nil, nil
	}
	t, err := template.New(name).Option("missingkey=zero").Parse(text)
	if err != nil {
		return nil, err
	}
	at := time.Unix(1700000000, 0)
	sample := newLinkData(map[string]string{"model_name": "m", "pod": "p", "namespace": "n", "alertname": "a"}, at.Add(-time.Hour), at)
	if _, err := renderURL(t, sample); err != nil {
		return nil, err
	}
	return t, nil
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
	if HTTPURL(b.String()) == "" {
		return "", fmt.Errorf("result %s is not an absolute http(s) URL", strconv.Quote(b.String()))
	}
	return b.String(), nil
}

// Link is a link as shown: its title and an http(s) URL.
type Link struct{ Title, URL string }

// alertLinks are an alert's links: its query in Prometheus, the configured templates (filled
// from labels over the alert's window), its runbook and the search of its slowest requests. Only
// http(s) URLs become links.
func alertLinks(it Item, labels map[string]string, now time.Time, o ViewOptions) []Link {
	var out []Link
	add := func(title, u string) {
		if u = HTTPURL(u); u != "" {
			out = append(out, Link{Title: title, URL: u})
		}
	}
	a := it.Alert
	add("Alert query in Prometheus", a.GeneratorURL)
	if len(o.Links) > 0 {
		from, to := a.StartsAt.Add(-o.WindowBefore), now
		if !a.EndsAt.IsZero() && a.EndsAt.Before(now) && a.Status == StatusResolved {
			to = a.EndsAt
		}
		if a.StartsAt.IsZero() {
			from = now.Add(-time.Hour)
		}
		data := newLinkData(labels, from, to)
		for _, l := range o.Links {
			if u, err := renderURL(l.Template, data); err == nil {
				add(l.Title, u)
			}
		}
	}
	add("Runbook", a.Annotations["runbook_url"])
	if d := it.Diagnosis; d != nil && d.SlowestRequests != nil {
		add("Slow requests in Jaeger", d.SlowestRequests.SearchLink)
	}
	return out
}
