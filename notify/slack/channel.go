package slack

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/store"
)

// channelKeyPrefix remembers the id Slack answered with for a post to a channel configured by
// name: the fallback while the name cannot be resolved.
const channelKeyPrefix = "slack:channel:"

// channelRetry is how long after a failed resolution of the channel's name the next one is tried
// (posts meanwhile go by name).
const channelRetry = 5 * time.Minute

// slackIDRe matches a conversation id: C (public or shared), G (private, older) or D (a DM).
var slackIDRe = regexp.MustCompile(`^[CGD][A-Z0-9]{2,}$`)

// channelRef is the configured channel as Slack knows it. Configured by name ("#incidents"), it
// is resolved to its id once, at the first post (conversations.list), and the id is used
// everywhere after: posts, edits, the pace and the history lookup of a post that timed out,
// which needs the id (a post's late answer, the other way to learn it, never came). While the
// name cannot be resolved (no channels:read scope, Slack down, no such channel visible) the
// responder says so and posts by name; it tries again after channelRetry.
type channelRef struct {
	cfg   *Config
	api   *webAPI
	store store.Store
	log   zerolog.Logger
	now   func() time.Time

	resolving sync.Mutex // held by the one caller resolving; the others do not wait for it
	mu        sync.Mutex
	id        string
	retryAt   time.Time
}

func newChannelRef(cfg *Config, api *webAPI, st store.Store, log zerolog.Logger, now func() time.Time) *channelRef {
	return &channelRef{cfg: cfg, api: api, store: st, log: log, now: now}
}

// configured is the channel as configured: an id, or a name with or without its '#'.
func (c *channelRef) configured() string { return strings.TrimSpace(c.cfg.Channel) }

// target is where to post: the channel's id when known, its configured name otherwise.
func (c *channelRef) target(ctx context.Context) string {
	if id := c.ID(ctx); id != "" {
		return id
	}
	return c.configured()
}

// ID is the channel's id, resolving the configured name first if it is time to; "" when it is
// not known. It resolves with at most half of what is left of ctx, so that a slow or failed
// resolution leaves the post its time.
func (c *channelRef) ID(ctx context.Context) string {
	if slackIDRe.MatchString(c.configured()) {
		return c.configured()
	}
	c.mu.Lock()
	id, due := c.id, c.now().After(c.retryAt)
	c.mu.Unlock()
	if id != "" {
		return id
	}
	if due && c.resolving.TryLock() {
		id = c.resolve(ctx)
		c.resolving.Unlock()
		if id != "" {
			return id
		}
	}
	return c.learned(ctx)
}

func (c *channelRef) resolve(ctx context.Context) string {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
		defer cancel()
	}
	name := strings.TrimPrefix(c.configured(), "#")
	id, err := c.api.FindChannel(ctx, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.log.Warn().Err(err).Str("channel", c.configured()).Dur("retry_in", channelRetry).
			Msg("could not resolve the slack channel's name to its id (it needs the channels:read scope, groups:read for a private channel); posting by name meanwhile")
	case id == "":
		c.log.Warn().Str("channel", c.configured()).Dur("retry_in", channelRetry).
			Msg("no slack channel of this name is visible to the bot (a private channel needs the groups:read scope); posting by name meanwhile")
	default:
		c.id = id
		c.log.Info().Str("channel", c.configured()).Str("channel_id", id).Msg("slack channel resolved")
		return id
	}
	c.retryAt = c.now().Add(channelRetry)
	return ""
}

// learned is the id Slack answered with for an earlier post by name ("" when none).
func (c *channelRef) learned(ctx context.Context) string {
	b, ok, err := c.store.Get(ctx, channelKeyPrefix+c.configured())
	if err != nil || !ok {
		return ""
	}
	return string(b)
}

// posted remembers the id Slack answered a post to target with, when it went by name.
func (c *channelRef) posted(ctx context.Context, target, id string) {
	if id != "" && target != id {
		_ = c.store.Set(ctx, channelKeyPrefix+c.configured(), []byte(id), 30*24*time.Hour)
	}
}

// maxChannelPages bounds the pages of conversations.list read for one resolution.
const maxChannelPages = 100

// FindChannel returns the id of the channel called name, paging through conversations.list (the
// public and private channels the token can see); "" when none has that name. It needs the
// channels:read scope, and groups:read for a private channel: without groups:read it looks among
// the public channels.
func (a *webAPI) FindChannel(ctx context.Context, name string) (string, error) {
	types := []string{"public_channel", "private_channel"}
	cursor := ""
	for range maxChannelPages {
		var chans []slackgo.Channel
		var next string
		err := rateLimitRetried(ctx, a.cfg, func(ctx context.Context) error {
			return a.call(ctx, methodConversationsList, "", func(ctx context.Context) error {
				var e error
				chans, next, e = a.client.GetConversationsContext(ctx, &slackgo.GetConversationsParameters{
					Cursor: cursor, ExcludeArchived: true, Limit: 1000, Types: types})
				return e
			})
		})
		var se slackgo.SlackErrorResponse
		if errors.As(err, &se) && se.Err == "missing_scope" && len(types) > 1 && cursor == "" {
			types = types[:1] // no groups:read: the public channels only
			continue
		}
		if err != nil {
			return "", err
		}
		for _, ch := range chans {
			if ch.Name == name || ch.NameNormalized == name {
				return ch.ID, nil
			}
		}
		if next == "" {
			return "", nil
		}
		cursor = next
	}
	return "", errors.New("conversations.list: too many pages")
}
