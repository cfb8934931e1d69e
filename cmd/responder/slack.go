package main

import (
	"context"

	"github.com/rs/zerolog"

	cfgpkg "github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/handlers"
	slacknotify "github.com/vllm-responder/vllm-responder/notify/slack"
	"github.com/vllm-responder/vllm-responder/profile"
	"github.com/vllm-responder/vllm-responder/store"
)

// mountSlack wires the Slack app's endpoints (slash command, buttons) when Slack is configured.
// Until handlers/slackapp lands, only notifications go to Slack.
func mountSlack(_ context.Context, _ *cfgpkg.Config, _ *handlers.Routes, _ *slacknotify.API, _ *dispatch.Dispatcher,
	_ *profile.Service, _ store.Store, _ zerolog.Logger) error {
	return nil
}
