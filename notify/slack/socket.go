package slack

import (
	"context"
	"errors"
	"strings"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// zlog routes slack-go's Socket Mode log lines to zerolog at debug level.
type zlog struct{ l zerolog.Logger }

func (z zlog) Output(_ int, s string) error {
	z.l.Debug().Msg(strings.TrimSpace(s))
	return nil
}

// RunSocketMode receives commands and button clicks over Socket Mode (the app-level token) and
// routes them exactly as the HTTP endpoints do. It returns when ctx ends, or with an error when
// the connection cannot be kept (a rejected token).
func (a *app) RunSocketMode(ctx context.Context) error {
	if !a.cfg.AppToken.IsSet() {
		return errors.New("socket mode: app_token is not set")
	}
	log := a.log.With().Str("component", "slack_socket_mode").Logger()
	client := socketmode.New(a.api.Client(), socketmode.OptionLog(zlog{log}))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- client.RunContext(ctx) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case evt := <-client.Events:
			if err := a.socketEvent(ctx, log, client, evt); err != nil {
				return err
			}
		}
	}
}

func (a *app) socketEvent(ctx context.Context, log zerolog.Logger, client *socketmode.Client, evt socketmode.Event) error {
	ack := func(payload ...any) {
		if evt.Request == nil {
			return
		}
		if err := client.AckCtx(ctx, evt.Request.EnvelopeID, first(payload)); err != nil {
			log.Error().Err(err).Str("event_type", string(evt.Type)).Msg("acknowledging a socket mode request")
		}
	}
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		log.Debug().Msg("connecting to slack")
	case socketmode.EventTypeConnected:
		log.Info().Msg("connected to slack over socket mode")
	case socketmode.EventTypeConnectionError:
		log.Warn().Interface("error", evt.Data).Msg("socket mode connection error; retrying")
	case socketmode.EventTypeInvalidAuth:
		return errors.New("socket mode: slack rejected the app_token")
	case socketmode.EventTypeSlashCommand:
		cmd, ok := evt.Data.(slackgo.SlashCommand)
		if !ok {
			ack()
			return nil
		}
		ack(a.HandleCommand(cmd))
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slackgo.InteractionCallback)
		ack()
		if ok {
			a.HandleInteraction(cb)
		}
	case socketmode.EventTypeEventsAPI:
		ack() // the app subscribes to no events; acknowledge so Slack does not resend
	}
	return nil
}

func first(p []any) any {
	if len(p) == 0 {
		return nil
	}
	return p[0]
}
