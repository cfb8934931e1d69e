// Package slack is the whole Slack integration, and New its one entry point.
//
// It posts diagnoses to Slack (notifier.go): one Block Kit message per Alertmanager group,
// replies in its thread when something changes, an edit of the parent when the group resolves, a
// chart of the playbook's series (its range queries in chartdata.go, its drawing in chart.go,
// its upload in charts_post.go) and the slowest traced requests (traces.go) in the thread, to
// the configured channel resolved to its id (channel.go). Every message maps notify's view of
// the notification (what it says, shared with Teams and the console) to Block Kit by pure
// functions of the view or the diagnosis and of the configuration (render.go, fleet.go,
// traces.go; golden files in testdata/golden), apart from their delivery. It serves the Slack app (app.go): the /vllm slash command, one subcommand per
// entry of subcommandTable (command.go), and the buttons under a diagnosis, one per entry of
// buttonTable (buttons.go), over the HTTP endpoints or Socket Mode (socket.go). Both talk to
// Slack through one API client (api.go: deadlines, metrics, pacing in pace.go, shared through a
// store.Pacer) that says whether a failure is worth a retry and never retries itself: the retry
// loop is notify.Retry, with this integration's Config.RetryPolicy. Its configuration (config.go,
// the `slack:` section) and its metrics (metrics.go) live here too. Outside the package only New,
// Options, Slack, Config and the interfaces they take are seen.
package slack

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/store"
)

// Options are what New needs. Config (after SetDefaults and Validate, with a bot token) and Store
// are required; the rest may be nil.
type Options struct {
	Config *Config
	// Store keeps threads, claims and diagnosis records. A store shared through Redis also
	// paces posts across the replicas that share it.
	Store store.Store
	// Prometheus answers the charts' range queries; nil: no charts.
	Prometheus RangeQuerier
	// Capturer runs profile captures (the Capture profile button, /vllm profile); nil: none.
	Capturer Capturer
	// MaxCapture is the longest capture the Capturer allows (profile.max_duration).
	MaxCapture time.Duration
	// Silencer creates the Silence button's silences (an Alertmanager); nil: no Silence button.
	Silencer Silencer
	// StormThreshold: a notification of more firing alerts than this is one storm summary
	// (dispatch.storm_threshold, read once by the caller).
	StormThreshold int
	// Registerer receives the Slack metrics; nil: not registered.
	Registerer prometheus.Registerer
	Logger     zerolog.Logger
}

// Slack is the integration: the notifier (Slack implements notify.Notifier through it) and,
// once started, the app that answers commands and buttons.
type Slack struct {
	o        Options
	api      *webAPI
	notifier *notifier
	app      *app
}

var _ notify.Notifier = (*Slack)(nil)

// Notify posts a group notification (notify.Notifier): a parent message the first time, a
// thread reply when something changed, an edit of the parent when the group resolves.
func (s *Slack) Notify(ctx context.Context, nt *notify.Notification) (bool, error) {
	return s.notifier.Notify(ctx, nt)
}

// New builds the integration. Call Start to receive commands and clicks, and Close on shutdown.
func New(o Options) (*Slack, error) {
	if o.Config == nil {
		return nil, errors.New("slack: no config")
	}
	api := newAPI(o.Config, newMetrics(o.Registerer), o.Logger, nil)
	if p, ok := o.Store.(store.Pacer); ok {
		api.sharePacing(p) // post_interval across the replicas that share the store
	}
	n, err := newNotifier(notifierOptions{Config: o.Config, Store: o.Store, API: api, Logger: o.Logger,
		Prometheus: o.Prometheus, Silence: o.Silencer != nil, Capture: o.Capturer != nil, StormThreshold: o.StormThreshold})
	if err != nil {
		return nil, err
	}
	return &Slack{notifier: n, o: o, api: api}, nil
}

// Start connects the app to t, which runs the playbooks on demand (the dispatcher; it needs the
// notifier first, hence this second step), and starts receiving commands and button clicks:
// over Socket Mode in the background (until ctx ends) when slack.socket_mode is set, otherwise
// through the two handlers returned for POST /slack/commands and POST /slack/interactions.
// Without a way for Slack to reach the responder (no signing secret, no Socket Mode) it starts
// nothing and returns nil handlers.
func (s *Slack) Start(ctx context.Context, t Triager) (commands, interactions http.Handler, err error) {
	if !s.o.Config.interactive() {
		return nil, nil, nil
	}
	app, err := newApp(appOptions{Config: s.o.Config, API: s.api, Triager: t, Capturer: s.o.Capturer, Silencer: s.o.Silencer,
		Incidents: s.notifier, Records: s.notifier, Logger: s.o.Logger, MaxCapture: s.o.MaxCapture})
	if err != nil {
		return nil, nil, err
	}
	s.app = app
	if s.o.Config.SocketMode {
		go func() {
			if err := app.RunSocketMode(ctx); err != nil && !errors.Is(err, context.Canceled) {
				s.o.Logger.Error().Err(err).Msg("slack socket mode stopped")
			}
		}()
		return nil, nil, nil
	}
	return app.CommandsHandler(), app.InteractionsHandler(), nil
}

// Close waits for the app's work in flight (answers to commands and clicks), until ctx ends.
func (s *Slack) Close(ctx context.Context) error {
	if s.app == nil {
		return nil
	}
	return s.app.Close(ctx)
}
