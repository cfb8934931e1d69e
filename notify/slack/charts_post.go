package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

var errChartTimeout = errors.New("chart timed out")

// maxChartsPerMessage bounds the charts uploaded for one parent message.
const maxChartsPerMessage = 2

// postCharts renders the declared charts of the first diagnosis that has any and uploads them
// into the thread. A failure is logged and counted; it never fails the notification.
func (n *notifier) postCharts(ctx context.Context, log zerolog.Logger, th *thread, v *notify.View) {
	if n.prom == nil || !n.cfg.chartsEnabled() || v.Summarised {
		return
	}
	for _, av := range v.Firing {
		if av.Diagnosis == nil || len(av.Diagnosis.Diagnosis.Charts) == 0 {
			continue
		}
		for i, spec := range av.Diagnosis.Diagnosis.Charts {
			if i == maxChartsPerMessage {
				break
			}
			if err := n.postChart(ctx, th, av.Diagnosis.Diagnosis, av.StartsAt, i); err != nil {
				n.api.metrics.Charts.WithLabelValues("failed").Inc()
				log.Warn().Err(err).Str("chart", spec.Title).Msg("chart not posted")
				continue
			}
			n.api.metrics.Charts.WithLabelValues("rendered").Inc()
		}
		return
	}
}

func (n *notifier) postChart(ctx context.Context, th *thread, d *playbooks.Diagnosis, start time.Time, i int) error {
	ctx, cancel := context.WithTimeoutCause(ctx, n.cfg.ChartTimeout, errChartTimeout)
	defer cancel()
	spec := d.Charts[i]
	end := d.EvaluatedAt
	if end.IsZero() {
		end = n.now()
	}
	rng := spec.Range
	if rng <= 0 {
		rng = time.Hour
	}
	panels, err := fetchChart(ctx, n.prom, spec, end)
	if err != nil {
		return fmt.Errorf("querying: %w", err)
	}
	png, err := renderChartPNG(spec.Title, panels, end.Add(-rng), end, start)
	if err != nil {
		return fmt.Errorf("rendering: %w", err)
	}
	var names []string
	for _, p := range panels {
		names = append(names, p.title)
	}
	return n.api.Upload(ctx, slackgo.UploadFileParameters{
		Reader:          bytes.NewReader(png),
		FileSize:        len(png),
		Filename:        fmt.Sprintf("%s-%d.png", strings.ReplaceAll(strings.ToLower(d.Playbook), " ", "-"), i),
		Title:           spec.Title,
		AltTxt:          truncate(spec.Title+": "+strings.Join(names, ", ")+" over the last "+notify.HumanDuration(rng)+", alert start marked", 1000),
		Channel:         th.Channel,
		ThreadTimestamp: th.TS,
	})
}
