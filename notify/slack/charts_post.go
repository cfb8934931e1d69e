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
)

var errChartTimeout = errors.New("chart timed out")

// maxChartsPerMessage bounds the charts uploaded for one parent message.
const maxChartsPerMessage = 2

// postCharts renders the declared charts of the first diagnosis that has any and uploads them
// into the thread. A failure is logged and counted; it never fails the notification.
func (n *notifier) postCharts(ctx context.Context, log zerolog.Logger, th *thread, items []notify.Item) {
	if n.prom == nil || !n.cfg.chartsEnabled() || len(items) > n.cfg.StormThreshold {
		return
	}
	for _, it := range items {
		if it.Diagnosis == nil || len(it.Diagnosis.Charts) == 0 {
			continue
		}
		for i, spec := range it.Diagnosis.Charts {
			if i == maxChartsPerMessage {
				break
			}
			if err := n.postChart(ctx, th, it, i); err != nil {
				n.api.metrics.Charts.WithLabelValues("failed").Inc()
				log.Warn().Err(err).Str("chart", spec.Title).Msg("chart not posted")
				continue
			}
			n.api.metrics.Charts.WithLabelValues("rendered").Inc()
		}
		return
	}
}

func (n *notifier) postChart(ctx context.Context, th *thread, it notify.Item, i int) error {
	ctx, cancel := context.WithTimeoutCause(ctx, n.cfg.ChartTimeout, errChartTimeout)
	defer cancel()
	spec := it.Diagnosis.Charts[i]
	end := it.Diagnosis.EvaluatedAt
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
	png, err := renderChartPNG(spec.Title, panels, end.Add(-rng), end, it.Alert.StartsAt)
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
		Filename:        fmt.Sprintf("%s-%d.png", strings.ReplaceAll(strings.ToLower(it.Diagnosis.Playbook), " ", "-"), i),
		Title:           spec.Title,
		AltTxt:          truncate(spec.Title+": "+strings.Join(names, ", ")+" over the last "+humanDuration(rng)+", alert start marked", 1000),
		Channel:         th.Channel,
		ThreadTimestamp: th.TS,
	})
}
