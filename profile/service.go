// Package profile captures bounded vLLM profiles on demand: it resolves a pod to the endpoint
// Prometheus scrapes, takes the pod's lock, POSTs /start_profile, waits the window, POSTs
// /stop_profile (which can take minutes while the trace flushes), and reports. Every capture is
// recorded in the store with its deadline, so that when the responder running it dies, a janitor
// on any replica stops the profiler: profiling is never left on.
package profile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/store"
)

var errShuttingDown = errors.New("the responder is shutting down")

// Store keys (the Redis store namespaces them further).
const (
	lockPrefix     = podendpoint.LockPrefix
	recordPrefix   = "profile:capture:"
	cooldownPrefix = "profile:cooldown:"
	janitorPrefix  = "profile:janitor:"
	// recordTTL bounds how long a record can outlive everything (a pod deleted mid-capture,
	// whose profiler nobody can stop any more).
	recordTTL = 24 * time.Hour
	// storeOpTimeout bounds each store call made outside a caller's context.
	storeOpTimeout = 5 * time.Second
)

// Record states.
const (
	StateStarting   = "starting"
	StateProfiling  = "profiling"
	StateStopping   = "stopping"
	StateStopFailed = "stop_failed"
)

// Record is a capture in the store: what the janitor needs to stop a profiler whose responder
// died, and what /vllm status shows.
type Record struct {
	ID          string        `json:"id"`
	Pod         string        `json:"pod"`
	Namespace   string        `json:"namespace,omitempty"`
	Endpoint    string        `json:"endpoint"`
	RequestedBy string        `json:"requested_by"`
	Source      string        `json:"source,omitempty"`
	Replica     string        `json:"replica"`
	RequestedAt time.Time     `json:"requested_at"`
	StartedAt   time.Time     `json:"started_at,omitzero"`
	Window      time.Duration `json:"window"`
	State       string        `json:"state"`
	// Deadline is when the profiler must have been stopped: past it, a janitor stops it.
	Deadline  time.Time `json:"deadline"`
	Attempts  int       `json:"janitor_attempts,omitempty"`
	LastError string    `json:"last_error,omitempty"`
	// SilenceID is the Alertmanager silence of the pod's alerts held for the capture, and
	// SilencedUntil its end; the janitor ends it when the responder holding it died.
	SilenceID     string    `json:"silence_id,omitempty"`
	SilencedUntil time.Time `json:"silenced_until,omitzero"`
}

// Request asks for a capture.
type Request struct {
	Pod string
	// Namespace may be empty when the pod name is unique among the scraped vLLM series.
	Namespace string
	// Duration is the profiling window; 0 means profile.default_duration.
	Duration time.Duration
	// RequestedBy is the human asking (Slack user, $USER); it is who a refused caller is told
	// holds the pod.
	RequestedBy string
	// Source says where the request came from (cli, slack), for the audit.
	Source string
}

// Deps are what a Service talks to.
type Deps struct {
	Prometheus Querier     // resolves pods to endpoints; required
	Store      store.Store // locks, records, cooldowns; required
	Metrics    *Metrics    // nil: unregistered metrics
	// Silencer holds a silence of the pod's alerts while a capture runs; nil (no
	// alertmanager.url): the pod's alerts fire, and the requester is told so.
	Silencer Silencer
	Logger   zerolog.Logger
	// Replica names this responder in records and holder names; empty: hostname-pid.
	Replica string
	// Naming is how vLLM's series are named and labelled (vllm.metric_prefix, router_label,
	// pod_label); the zero value is vLLM's own names without router exclusion, pods by pod.
	Naming vllmnames.Naming
}

// Service runs captures and the janitor.
type Service struct {
	cfg      Config
	prom     Querier
	store    store.Store
	silencer Silencer
	metrics  *Metrics
	log      zerolog.Logger
	replica  string
	client   *vllmClient
	naming   vllmnames.Naming
	// grace is added to every record deadline before the janitor acts on it.
	grace time.Duration

	mu        sync.Mutex
	active    map[string]*capture // captures this replica runs, by id
	janitored map[string]bool     // record ids the janitor is working on
	wg        sync.WaitGroup
	closing   chan struct{}
	closeOnce sync.Once
}

// New returns a Service. cfg must have been defaulted; New validates it.
func New(cfg Config, d Deps) (*Service, error) {
	if !cfg.compiled() {
		if err := cfg.Validate(); err != nil {
			return nil, configerr.Prefix("profile", err)
		}
	}
	if d.Prometheus == nil || d.Store == nil {
		return nil, errors.New("profile.New: Prometheus and Store are required")
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics(nil)
	}
	if d.Replica == "" {
		h, _ := os.Hostname()
		d.Replica = h + "-" + strconv.Itoa(os.Getpid())
	}
	return &Service{
		cfg:       cfg,
		prom:      d.Prometheus,
		store:     d.Store,
		silencer:  d.Silencer,
		metrics:   d.Metrics,
		log:       d.Logger.With().Str("component", "profile").Logger(),
		replica:   d.Replica,
		client:    newVLLMClient(cfg.networks, cfg.BearerToken),
		naming:    d.Naming,
		grace:     5 * time.Second,
		active:    make(map[string]*capture),
		janitored: make(map[string]bool),
		closing:   make(chan struct{}),
	}, nil
}

// capture is one capture this replica runs.
type capture struct {
	rec    Record
	lock   store.Lock
	key    string // namespace/pod
	window time.Duration
	notice Notice
	traces Traces

	cutOnce sync.Once
	cut     chan struct{} // closed to end the window early
	cutWhy  string
}

func (c *capture) cutShort(why string) {
	c.cutOnce.Do(func() { c.cutWhy = why; close(c.cut) })
}

// Start validates and resolves the request, takes the pod's lock and returns at once; the
// capture then runs in a goroutine of its own, detached from ctx, and done (if not nil) gets the
// report. Refusals are returned: *BusyError, *CooldownError, ErrUnknownPod, ErrInvalidRequest,
// ErrCapturesDisabled, ErrEndpointNotAllowed, or an error wrapping store.ErrUnavailable (fail
// closed). ErrProfilerDisabled comes in the report, as the server is only asked after Start.
func (s *Service) Start(ctx context.Context, req Request, done func(*Report)) error {
	_, err := s.start(ctx, req, done)
	return err
}

// Begin is Start that also returns what the capture costs the pod (the notice to give the
// requester): the stall, the last measured flush, the silence held.
func (s *Service) Begin(ctx context.Context, req Request, done func(*Report)) (Notice, error) {
	c, err := s.start(ctx, req, done)
	if err != nil {
		return Notice{}, err
	}
	return c.notice, nil
}

// Capture runs a capture and waits for its report (CLI). When ctx ends first, the window is
// cut short and the profiler is still stopped before Capture returns. The error is the refusal
// or the capture's failure (report.Err).
func (s *Service) Capture(ctx context.Context, req Request) (*Report, error) {
	return s.capture(ctx, req, nil)
}

// capture is Capture that hands the notice to started (if not nil) once the capture started.
func (s *Service) capture(ctx context.Context, req Request, started func(Notice)) (*Report, error) {
	ch := make(chan *Report, 1)
	c, err := s.start(ctx, req, func(r *Report) { ch <- r })
	if err != nil {
		return nil, err
	}
	if started != nil {
		started(c.notice)
	}
	select {
	case r := <-ch:
		return r, r.Err
	case <-ctx.Done():
		c.cutShort("interrupted")
	}
	r := <-ch
	return r, r.Err
}

// Running lists the captures recorded in the store (all replicas), oldest first.
func (s *Service) Running(ctx context.Context) ([]Record, error) {
	recs, err := s.listRecords(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].RequestedAt.Before(recs[j].RequestedAt) })
	return recs, nil
}

// Shutdown cuts the windows of running captures short and waits until their profilers are
// stopped (and the janitor's stops finish), or ctx ends.
func (s *Service) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closeOnce.Do(func() { close(s.closing) })
	for _, c := range s.active {
		c.cutShort("the responder is shutting down")
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) start(ctx context.Context, req Request, done func(*Report)) (*capture, error) {
	c, err := s.begin(ctx, req)
	if err != nil {
		result := resultOf(err)
		s.metrics.captures.WithLabelValues(result).Inc()
		s.log.Info().Str("pod", podName(req.Namespace, req.Pod)).Str("requested_by", req.RequestedBy).
			Str("result", result).Err(err).Msg("profile capture refused")
		return nil, err
	}
	go func() {
		defer s.wg.Done()
		rep := s.run(c)
		s.metrics.captures.WithLabelValues(rep.Result).Inc()
		if done != nil {
			done(rep)
		}
	}()
	return c, nil
}

// resultOf maps a refusal to its metric label.
func resultOf(err error) string {
	var busy *BusyError
	var cool *CooldownError
	switch {
	case errors.As(err, &busy):
		return ResultBusy
	case errors.As(err, &cool):
		return ResultCooldown
	case errors.Is(err, ErrUnknownPod):
		return ResultUnknownPod
	case errors.Is(err, ErrProfilerDisabled):
		return ResultDisabled
	case errors.Is(err, ErrProfilerBusy):
		return ResultBusy
	case errors.Is(err, store.ErrUnavailable):
		return ResultStoreUnavailable
	case errors.Is(err, ErrSilenceFailed):
		return ResultSilenceFailed
	case errors.Is(err, ErrStopTimeout):
		return ResultStopTimeout
	default:
		return ResultError
	}
}

// begin does the synchronous part of Start: checks, resolution, lock, cooldown, record.
func (s *Service) begin(ctx context.Context, req Request) (*capture, error) {
	if !s.cfg.Enabled {
		return nil, ErrCapturesDisabled
	}
	select {
	case <-s.closing:
		return nil, errShuttingDown
	default:
	}
	if !namePattern.MatchString(req.Pod) {
		return nil, fmt.Errorf("%w: pod %q is not a pod name", ErrInvalidRequest, req.Pod)
	}
	if req.Namespace != "" && !namePattern.MatchString(req.Namespace) {
		return nil, fmt.Errorf("%w: namespace %q is not a namespace name", ErrInvalidRequest, req.Namespace)
	}
	window := req.Duration
	if window == 0 {
		window = s.cfg.DefaultDuration
	}
	if window < 0 || window > s.cfg.MaxDuration {
		return nil, fmt.Errorf("%w: duration %s is outside (0, %s] (profile.max_duration)", ErrInvalidRequest, window, s.cfg.MaxDuration)
	}
	if req.RequestedBy == "" {
		req.RequestedBy = "unknown"
	}

	t, err := s.resolve(ctx, req.Pod, req.Namespace)
	if err != nil {
		return nil, err
	}
	key := t.Name()
	now := time.Now()
	id := newID()
	lock, err := s.store.Lock(ctx, lockPrefix+key, s.cfg.LockTTL, store.LockHolder{ID: id, Name: req.RequestedBy, Since: now})
	var locked *store.LockedError
	switch {
	case errors.As(err, &locked):
		s.metrics.contention.Inc()
		return nil, &BusyError{Pod: key, Holder: locked.Holder.Name, Since: locked.Holder.Since}
	case err != nil:
		return nil, fmt.Errorf("profile captures are refused while the store cannot be reached: %w", err)
	}
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeOpTimeout)
		defer cancel()
		_ = lock.Release(rctx)
	}

	if until, ok, err := s.cooldownUntil(ctx, key); err != nil {
		release()
		return nil, fmt.Errorf("profile captures are refused while the store cannot be reached: %w", err)
	} else if ok && now.Before(until) {
		release()
		return nil, &CooldownError{Pod: key, Until: until}
	}

	c := &capture{
		rec: Record{
			ID: id, Pod: t.Pod, Namespace: t.Namespace, Endpoint: t.Endpoint,
			RequestedBy: req.RequestedBy, Source: req.Source, Replica: s.replica,
			RequestedAt: now, Window: window, State: StateStarting,
			Deadline: now.Add(s.cfg.StartTimeout + window + s.grace),
		},
		lock: lock, key: key, window: window, cut: make(chan struct{}),
		traces: s.cfg.tracesFor(t),
	}
	c.notice = Notice{Pod: key, Window: window}
	expected := s.cfg.Silence.ExpectedFlush
	if f, ok := s.lastFlush(ctx, key); ok {
		c.notice.LastFlush, c.notice.LastFlushAt = f.Took, f.At
		expected = f.Took
	}
	log := s.log.With().Str("capture_id", id).Str("pod", key).Logger()
	if s.silencer != nil {
		// Window, the expected flush and the margin; extended while a longer flush runs.
		end := now.Add(s.cfg.StartTimeout + window + expected + s.cfg.Silence.Margin)
		sid, err := s.silencer.Create(ctx, s.silenceFor(c.rec, now, end))
		s.metrics.silenceOp(silenceCreate, err)
		if err != nil {
			release()
			return nil, fmt.Errorf("%w: %w", ErrSilenceFailed, err)
		}
		c.rec.SilenceID, c.rec.SilencedUntil = sid, end
		c.notice.SilenceID, c.notice.SilenceURL, c.notice.SilencedUntil = sid, s.silencer.URL(sid), end
		log.Info().Str("silence_id", sid).Time("silenced_until", end).Msg("pod's alerts silenced for the capture")
	}
	if err := s.putRecord(ctx, c.rec); err != nil {
		s.endSilence(&c.rec, log, 0)
		release()
		return nil, fmt.Errorf("profile captures are refused while the store cannot be reached: %w", err)
	}
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		_ = s.deleteRecord(context.WithoutCancel(ctx), key, id)
		s.endSilence(&c.rec, log, 0)
		release()
		return nil, errShuttingDown
	default:
	}
	s.active[id] = c
	s.wg.Add(1) // under s.mu, ordered with Shutdown's close and Wait
	s.mu.Unlock()
	s.metrics.running.Inc()
	s.log.Info().Str("capture_id", id).Str("pod", key).Str("endpoint", hostOf(t.Endpoint)).
		Str("requested_by", req.RequestedBy).Str("source", req.Source).Dur("window", window).Msg("profile capture accepted")
	return c, nil
}

// run is the asynchronous part: start, window, stop, clean up. It never returns before the
// profiler was stopped or the stop failed (then the record stays for the janitor).
func (s *Service) run(c *capture) *Report {
	defer func() {
		s.mu.Lock()
		delete(s.active, c.rec.ID)
		s.mu.Unlock()
		s.metrics.running.Dec()
	}()
	log := s.log.With().Str("capture_id", c.rec.ID).Str("pod", c.key).Logger()
	rep := s.newReport(c)
	defer func() { rep.SilenceID, rep.SilencedUntil = c.rec.SilenceID, c.rec.SilencedUntil }()
	if rep.Silenced {
		defer func() { rep.SilenceURL = s.silencer.URL(c.rec.SilenceID) }()
	}
	noteStore := sync.OnceFunc(func() {
		rep.Notes = append(rep.Notes, "the store could not be reached during the capture: the pod's lock expires by itself within profile.lock_ttl and a janitor clears the record")
	})
	ctx := context.Background()

	stopRefresh := s.keepLock(c, log, func(err error) {
		if errors.Is(err, store.ErrNotHeld) {
			c.cutShort("the pod's lock was lost")
		}
	})

	// Start.
	sctx, cancel := context.WithTimeoutCause(ctx, s.cfg.StartTimeout, ErrStartTimeout)
	err := s.client.post(sctx, c.rec.Endpoint, "/start_profile")
	cancel()
	if err != nil && (errors.Is(err, ErrProfilerDisabled) || errors.Is(err, ErrProfilerBusy) || notReached(err)) {
		// Profiling cannot be on, or is someone else's session: clean up at once, no stop.
		rep.Err = err
		rep.Result = resultOf(err)
		stopRefresh()
		s.abandon(ctx, c, log, noteStore)
		log.Warn().Err(err).Str("result", rep.Result).Msg("profile capture failed to start")
		return rep
	}
	if err != nil {
		// Timeout or 5xx: profiling may be on. Bracket it: stop anyway.
		rep.Err = fmt.Errorf("start_profile failed, stopping the profiler in case it started: %w", err)
		rep.Notes = append(rep.Notes, "start_profile failed; the profiler was stopped in case it had started anyway")
		log.Warn().Err(err).Msg("start_profile failed; stopping in case it started")
	} else {
		s.profile(ctx, c, rep, log, noteStore)
	}

	// Stop.
	stopErr := s.stop(ctx, c, rep, log, noteStore)
	stopRefresh()
	if stopErr != nil && !errors.Is(stopErr, ErrProfilerDisabled) {
		s.leaveToJanitor(ctx, c, rep, stopErr, log, noteStore)
		return rep
	}
	if rep.Err == nil {
		rep.Result = ResultOK
	} else {
		rep.Result = ResultError
	}
	s.finish(ctx, c, rep, stopErr == nil, log, noteStore)
	return rep
}

// newReport is the report of c as accepted, before anything ran.
func (s *Service) newReport(c *capture) *Report {
	rep := &Report{
		ID: c.rec.ID, Pod: c.rec.Pod, Namespace: c.rec.Namespace, Endpoint: c.rec.Endpoint,
		RequestedBy: c.rec.RequestedBy, Source: c.rec.Source, Replica: s.replica,
		RequestedAt: c.rec.RequestedAt, Window: c.window,
	}
	rep.TraceDir, rep.TraceLink, rep.Kind = c.traces.Where, c.traces.Link, c.traces.Kind
	rep.Silenced = s.silencer != nil
	return rep
}

// abandon cleans up a capture whose profiler never started: the silence ends at once (nothing
// stalled), the record goes, the lock is released.
func (s *Service) abandon(ctx context.Context, c *capture, log zerolog.Logger, noteStore func()) {
	s.endSilence(&c.rec, log, 0)
	if s.deleteRecord(ctx, c.key, c.rec.ID) != nil {
		noteStore()
	}
	s.releaseLock(c.lock, log)
}

// profile records that the profiler runs, holds the pod back for the cooldown and waits for the
// window to end or be cut short.
func (s *Service) profile(ctx context.Context, c *capture, rep *Report, log zerolog.Logger, noteStore func()) {
	rep.StartedAt = time.Now()
	c.rec.StartedAt, c.rec.State = rep.StartedAt, StateProfiling
	c.rec.Deadline = rep.StartedAt.Add(c.window + s.grace)
	if s.putRecord(ctx, c.rec) != nil {
		noteStore()
	}
	if s.cfg.Cooldown > 0 {
		// Set now, so a crash mid-capture still holds the pod back.
		if s.setCooldown(ctx, c.key, c.rec.Deadline.Add(s.cfg.Cooldown)) != nil {
			noteStore()
		}
	}
	log.Info().Dur("window", c.window).Msg("profiler started")

	timer := time.NewTimer(c.window)
	select {
	case <-timer.C:
	case <-c.cut:
		timer.Stop()
		rep.Notes = append(rep.Notes, "window cut short: "+c.cutWhy)
		log.Warn().Str("reason", c.cutWhy).Msg("profile window cut short")
	}
	rep.Profiled = time.Since(rep.StartedAt)
}

// stop calls stop_profile within profile.stop_timeout, the pod kept silenced while it runs, and
// returns its error.
func (s *Service) stop(ctx context.Context, c *capture, rep *Report, log zerolog.Logger, noteStore func()) error {
	c.rec.State = StateStopping
	c.rec.Deadline = time.Now().Add(s.cfg.StopTimeout + s.grace)
	if s.putRecord(ctx, c.rec) != nil {
		noteStore()
	}
	stopStart := time.Now()
	stopSilence := s.keepSilence(&c.rec, log, func() {
		if s.putRecord(ctx, c.rec) != nil {
			noteStore()
		}
	})
	stctx, cancel := context.WithTimeoutCause(ctx, s.cfg.StopTimeout, ErrStopTimeout)
	stopErr := s.client.post(stctx, c.rec.Endpoint, "/stop_profile")
	cancel()
	rep.StopTook = time.Since(stopStart)
	stopSilence()
	s.metrics.stopDuration.Observe(rep.StopTook.Seconds())
	return stopErr
}

// leaveToJanitor ends a capture whose stop failed: the profiler may still be on. It keeps the
// lock until its TTL lapses (the server may still be flushing) and leaves the record for a
// janitor to retry the stop then.
func (s *Service) leaveToJanitor(ctx context.Context, c *capture, rep *Report, stopErr error, log zerolog.Logger, noteStore func()) {
	rep.Err = stopErr
	rep.Result = ResultError
	if errors.Is(stopErr, ErrStopTimeout) {
		rep.Result = ResultStopTimeout
		rep.Err = fmt.Errorf("stop_profile did not answer within profile.stop_timeout %s: %w", s.cfg.StopTimeout, stopErr)
	}
	c.rec.State, c.rec.LastError = StateStopFailed, stopErr.Error()
	c.rec.Deadline = time.Now().Add(s.cfg.LockTTL)
	// The server may still be flushing: keep the pod silenced until the janitor's retry,
	// which extends the silence while its own stop runs and then ends it.
	s.endSilence(&c.rec, log, s.cfg.LockTTL+s.silenceLead()+s.cfg.Silence.Margin)
	if s.putRecord(ctx, c.rec) != nil {
		noteStore()
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("the pod stays locked until profile.lock_ttl (%s) lapses; a janitor will call stop_profile again", s.cfg.LockTTL))
	log.Error().Err(stopErr).Dur("stop_duration", rep.StopTook).Str("result", rep.Result).Msg("stop_profile failed; the janitor will retry")
}

// finish cleans up a capture whose profiler was stopped (stopped: stop_profile answered): the
// flush time learnt, the silence ended a margin after it, the cooldown set from now, the record
// deleted and the lock released.
func (s *Service) finish(ctx context.Context, c *capture, rep *Report, stopped bool, log zerolog.Logger, noteStore func()) {
	if stopped && !rep.StartedAt.IsZero() {
		s.recordFlush(c.key, rep.StopTook, log)
	}
	// The alerts' windows still hold the stall: the silence ends a margin after the flush.
	s.endSilence(&c.rec, log, s.cfg.Silence.Margin)
	if s.cfg.Cooldown > 0 && !rep.StartedAt.IsZero() {
		if s.setCooldown(ctx, c.key, time.Now().Add(s.cfg.Cooldown)) != nil {
			noteStore()
		}
	}
	if s.deleteRecord(ctx, c.key, c.rec.ID) != nil {
		noteStore()
	}
	s.releaseLock(c.lock, log)
	log.Info().Str("requested_by", rep.RequestedBy).Dur("profiled", rep.Profiled).Dur("stop_duration", rep.StopTook).
		Str("result", rep.Result).Msg("profile capture finished")
}

// keepLock refreshes the lock every third of its TTL until the returned function is called
// (which waits for the refresher to end). onErr sees each failed refresh.
func (s *Service) keepLock(c *capture, log zerolog.Logger, onErr func(error)) func() {
	ttl := s.cfg.LockTTL
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), storeOpTimeout)
			err := c.lock.Refresh(ctx, ttl)
			cancel()
			if err != nil {
				log.Warn().Err(err).Msg("refreshing the pod's lock failed")
				onErr(err)
				if errors.Is(err, store.ErrNotHeld) {
					return
				}
			}
		}
	}()
	return sync.OnceFunc(func() { close(stop); <-done })
}

func (s *Service) releaseLock(l store.Lock, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), storeOpTimeout)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		log.Warn().Err(err).Msg("releasing the pod's lock failed; it expires by its TTL")
	}
}

func (s *Service) putRecord(ctx context.Context, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	defer cancel()
	err = s.store.Set(ctx, recordPrefix+podName(r.Namespace, r.Pod), b, recordTTL)
	if err != nil {
		s.log.Warn().Err(err).Str("capture_id", r.ID).Msg("writing the capture record failed")
	}
	return err
}

func (s *Service) getRecord(ctx context.Context, key string) (Record, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	defer cancel()
	b, ok, err := s.store.Get(ctx, recordPrefix+key)
	if err != nil || !ok {
		return Record{}, false, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, false, fmt.Errorf("capture record %s: %w", key, err)
	}
	return r, true, nil
}

// deleteRecord deletes the pod's record if it is still capture id's.
func (s *Service) deleteRecord(ctx context.Context, key, id string) error {
	r, ok, err := s.getRecord(ctx, key)
	if err != nil || !ok || r.ID != id {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	defer cancel()
	return s.store.Delete(ctx, recordPrefix+key)
}

func (s *Service) listRecords(ctx context.Context) ([]Record, error) {
	m, err := s.store.List(ctx, recordPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(m))
	for k, b := range m {
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			s.log.Warn().Err(err).Str("key", k).Msg("unreadable capture record skipped")
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *Service) cooldownUntil(ctx context.Context, key string) (time.Time, bool, error) {
	b, ok, err := s.store.Get(ctx, cooldownPrefix+key)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		return time.Time{}, false, nil // unreadable: no cooldown
	}
	return t, true, nil
}

func (s *Service) setCooldown(ctx context.Context, key string, until time.Time) error {
	b, _ := until.MarshalText()
	ctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	defer cancel()
	return s.store.Set(ctx, cooldownPrefix+key, b, time.Until(until))
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
