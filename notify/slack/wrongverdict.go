package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/playbooks/fixture"
)

// maxInlineFixture is the longest fixture posted as a code block in the thread; a longer one (a
// large fleet's values) is uploaded as a file, which Slack shows with a preview.
const maxInlineFixture = 2800

// correctVerdict answers a Wrong verdict? choice: the fixture that reproduces the diagnosis and
// expects the chosen verdict, in the thread, and one count of the correction. The values come
// from the diagnosis record the responder kept when it posted the message, found by the id the
// option carries: a crafted option can only name a record the responder wrote, and the verdict
// given is the record's, never the click's.
func (a *app) correctVerdict(ctx context.Context, log zerolog.Logger, c click) {
	value := c.value
	if a.records == nil {
		a.tell(ctx, log, c, ":no_entry: Verdict corrections are not available on this responder.")
		return
	}
	id, chosen, err := decodeCorrection(value)
	if err != nil {
		log.Warn().Str("value", value).Msg("unreadable wrong-verdict choice")
		a.tell(ctx, log, c, ":no_entry: "+err.Error()+".")
		return
	}
	rec, err := a.records.LoadRecord(ctx, id)
	if err != nil {
		if !errors.Is(err, errRecordGone) && !errors.Is(err, errBadCorrection) {
			log.Error().Err(err).Msg("loading the diagnosis record")
		}
		a.tell(ctx, log, c, ":x: No fixture: "+oneLine(err))
		return
	}
	if chosen == rec.Verdict {
		a.tell(ctx, log, c, fmt.Sprintf(":information_source: `%s` is the verdict given; pick the one you believe is right.", chosen))
		return
	}
	fixture, err := fixture.FromRecord(rec, chosen)
	if err != nil {
		a.tell(ctx, log, c, ":x: No fixture: "+oneLine(err))
		return
	}
	if slices.Contains(playbooks.KnownVerdicts, rec.Verdict) {
		a.metrics.Corrections.WithLabelValues(rec.Playbook, rec.Verdict, chosen).Inc()
	}
	log.Info().Str("playbook", rec.Playbook).Str("given", rec.Verdict).Str("chosen", chosen).Msg("verdict corrected from slack")
	intro := fmt.Sprintf(":memo: <@%s> says this is `%s`, not `%s`. The regression test for `responder playbooks test` "+
		"(it fails until playbook `%s` gives `%s`):", c.userID, chosen, rec.Verdict, rec.Playbook, chosen)
	if len(fixture) <= maxInlineFixture {
		a.inThread(ctx, log, c, slackgo.MsgOptionText(intro+"\n```\n"+string(fixture)+"```", false))
		return
	}
	err = a.api.Upload(ctx, slackgo.UploadFileParameters{
		Reader: bytes.NewReader(fixture), FileSize: len(fixture),
		Filename: fmt.Sprintf("%s-%s_test.yaml", rec.Playbook, chosen), Title: fmt.Sprintf("%s: %s, not %s", rec.Playbook, chosen, rec.Verdict),
		InitialComment: intro, Channel: c.channel, ThreadTimestamp: c.threadTS,
	})
	if err != nil {
		log.Error().Err(err).Msg("uploading the fixture")
		a.tell(ctx, log, c, ":x: Could not upload the fixture: "+oneLine(err))
	}
}
