package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

// recordKeyPrefix is the store key prefix of the diagnosis records the select refers to.
const recordKeyPrefix = "slack:diagnosis:"

// Why a correction is refused; the handler tells the user.
var (
	errRecordGone    = errors.New("the recorded values of this diagnosis are no longer kept (older than slack.thread_ttl); run `responder triage --at ... --fixture FILE --expect VERDICT` instead")
	errBadCorrection = errors.New("not a verdict correction this responder offered")
)

// KeepRecord stores what diagnosis d was decided from and sets d.RecordID, the name the message's
// "Wrong verdict?" select refers to it by. The id is a hash of the record, so a retried post
// stores the same record once. Without a record (no evidence) or with the store down, RecordID
// stays empty and the message has no select: the diagnosis is posted all the same.
func (n *notifier) KeepRecord(ctx context.Context, d *playbooks.Diagnosis) {
	if d == nil || d.Record == nil || d.RecordID != "" {
		return
	}
	b, err := json.Marshal(d.Record)
	if err != nil {
		n.log.Warn().Err(err).Str("playbook", d.Playbook).Msg("diagnosis record not kept: no Wrong verdict? select")
		return
	}
	h := sha256.Sum256(b)
	id := hex.EncodeToString(h[:16])
	if err := n.store.Set(ctx, recordKeyPrefix+id, b, n.cfg.ThreadTTL); err != nil {
		n.log.Warn().Err(err).Str("playbook", d.Playbook).Msg("diagnosis record not kept: no Wrong verdict? select")
		return
	}
	d.RecordID = id
}

// keepRecords keeps the record of every diagnosis of a notification before it is rendered.
func (n *notifier) keepRecords(ctx context.Context, nt *notify.Notification) {
	for _, it := range nt.Items {
		n.KeepRecord(ctx, it.Diagnosis)
	}
}

// LoadRecord returns the record a "Wrong verdict?" select refers to.
func (n *notifier) LoadRecord(ctx context.Context, id string) (*playbooks.Record, error) {
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, errBadCorrection
	}
	b, ok, err := n.store.Get(ctx, recordKeyPrefix+id)
	switch {
	case errors.Is(err, store.ErrUnavailable):
		return nil, fmt.Errorf("the store is unreachable, try again later: %w", err)
	case err != nil:
		return nil, err
	case !ok:
		return nil, errRecordGone
	}
	var r playbooks.Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("unreadable diagnosis record: %w", err)
	}
	return &r, nil
}

// encodeCorrection is the value of one option of the select: the record's id and the verdict
// chosen (Slack allows 150 characters; this is at most 55).
func encodeCorrection(recordID, chosen string) string { return recordID + "|" + chosen }

// decodeCorrection parses an option's value; the verdict must be a known one.
func decodeCorrection(v string) (recordID, chosen string, err error) {
	id, chosen, ok := strings.Cut(v, "|")
	if !ok || id == "" || !slices.Contains(playbooks.KnownVerdicts, chosen) {
		return "", "", errBadCorrection
	}
	return id, chosen, nil
}

// wrongVerdictSelect is the "Wrong verdict?" select of a kept diagnosis: every verdict id but the
// one given. nil when the diagnosis was not kept (no record, store down).
func wrongVerdictSelect(d *playbooks.Diagnosis) *slackgo.SelectBlockElement {
	if d == nil || d.RecordID == "" {
		return nil
	}
	var opts []*slackgo.OptionBlockObject
	for _, v := range playbooks.KnownVerdicts {
		if v == d.Verdict {
			continue
		}
		opts = append(opts, slackgo.NewOptionBlockObject(encodeCorrection(d.RecordID, v), plain(v, 75), nil))
	}
	return slackgo.NewOptionsSelectBlockElement(slackgo.OptTypeStatic, plain("Wrong verdict?", 150), actionWrongVerdict, opts...)
}
