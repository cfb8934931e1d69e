package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/silence"
)

// A capture stalls the pod: stop_profile runs in vLLM's engine core busy loop, so nothing on the
// pod makes progress while the traces are written (with data parallelism, on every engine of the
// pod). Its own alerts would page someone for a stall the responder caused. So while a capture
// runs (window, flush and profile.silence.margin) the responder holds an Alertmanager silence of
// the pod's vLLM alerts, extends it while the flush outlasts it, and ends it afterwards; the
// janitor ends the silence of a capture whose responder died.

// Silencer is the part of the Alertmanager client a capture needs; *silence.Client implements it.
type Silencer interface {
	Create(ctx context.Context, s silence.Silence) (string, error)
	SetEnd(ctx context.Context, id string, end time.Time) (string, error)
	Expire(ctx context.Context, id string) error
	URL(id string) string
}

// ErrSilenceFailed: the pod's alerts could not be silenced, so the capture was refused rather
// than page someone for the stall it causes.
var ErrSilenceFailed = errors.New("the pod's alerts could not be silenced in Alertmanager; capture refused so that it pages nobody")

const (
	flushPrefix = "profile:flush:"
	// flushTTL is how long a measured flush is remembered for a pod.
	flushTTL = 30 * 24 * time.Hour
)

// flush is the last measured stop_profile of a pod.
type flush struct {
	Took time.Duration `json:"took"`
	At   time.Time     `json:"at"`
}

func (s *Service) lastFlush(ctx context.Context, key string) (flush, bool) {
	ctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	defer cancel()
	b, ok, err := s.store.Get(ctx, flushPrefix+key)
	if err != nil || !ok {
		return flush{}, false
	}
	var f flush
	if json.Unmarshal(b, &f) != nil || f.Took <= 0 {
		return flush{}, false
	}
	return f, true
}

func (s *Service) recordFlush(key string, took time.Duration, log zerolog.Logger) {
	b, _ := json.Marshal(flush{Took: took, At: time.Now()})
	ctx, cancel := context.WithTimeout(context.Background(), storeOpTimeout)
	defer cancel()
	if err := s.store.Set(ctx, flushPrefix+key, b, flushTTL); err != nil {
		log.Warn().Err(err).Msg("recording the flush duration failed")
	}
}

// silenceFor is the silence of the pod's vLLM alerts for capture rec.
func (s *Service) silenceFor(rec Record, start, end time.Time) silence.Silence {
	ms := []silence.Matcher{{Name: "pod", Value: rec.Pod, IsEqual: true}}
	if rec.Namespace != "" {
		ms = append(ms, silence.Matcher{Name: "namespace", Value: rec.Namespace, IsEqual: true})
	}
	ms = append(ms, silence.Matcher{Name: "alertname", Value: s.cfg.Silence.Alertnames, IsRegex: true, IsEqual: true})
	return silence.Silence{
		Matchers: ms, StartsAt: start, EndsAt: end,
		CreatedBy: "vllm-responder for " + rec.RequestedBy,
		Comment: fmt.Sprintf("vllm-responder profile capture %s of pod %s requested by %s: the pod stops serving while stop_profile flushes the trace",
			rec.ID, podName(rec.Namespace, rec.Pod), rec.RequestedBy),
	}
}

// silenceLead is how long before a held silence ends it is extended while the flush runs.
func (s *Service) silenceLead() time.Duration {
	return max(s.cfg.Silence.Margin/2, 5*time.Second)
}

// keepSilence extends the silence held in rec (SilenceID, SilencedUntil) while a stop_profile
// runs, until the returned function is called (which waits for the keeper). changed sees each
// extension, from the keeper's goroutine.
func (s *Service) keepSilence(rec *Record, log zerolog.Logger, changed func()) func() {
	if s.silencer == nil || rec.SilenceID == "" {
		return func() {}
	}
	lead := s.silenceLead()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			t := time.NewTimer(max(time.Until(rec.SilencedUntil)-lead, 0))
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
			end := time.Now().Add(2*lead + s.cfg.Silence.Margin)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			id, err := s.silencer.SetEnd(ctx, rec.SilenceID, end)
			cancel()
			s.metrics.silenceOp(silenceExtend, err)
			switch {
			case err != nil:
				log.Warn().Err(err).Str("silence_id", rec.SilenceID).Msg("extending the capture's silence failed; retrying")
				select {
				case <-stop:
					return
				case <-time.After(min(lead/2, 5*time.Second)):
				}
				continue
			case id == "":
				log.Warn().Str("silence_id", rec.SilenceID).Msg("the capture's silence was expired by someone else; not recreated")
				return
			}
			log.Info().Str("silence_id", id).Time("silenced_until", end).Msg("flush outlasts the silence: extended")
			rec.SilenceID, rec.SilencedUntil = id, end
			changed()
		}
	}()
	return sync.OnceFunc(func() { close(stop); <-done })
}

// endSilence moves the end of rec's silence to margin after now (expires it at once with a
// margin of 0) and records the new end in rec. Nothing held: nothing to do.
func (s *Service) endSilence(rec *Record, log zerolog.Logger, margin time.Duration) {
	if s.silencer == nil || rec.SilenceID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end := time.Now().Add(margin)
	var err error
	id := rec.SilenceID
	if margin <= 0 {
		err = s.silencer.Expire(ctx, id)
	} else {
		id, err = s.silencer.SetEnd(ctx, id, end)
	}
	s.metrics.silenceOp(silenceEnd, err)
	if err != nil {
		log.Warn().Err(err).Str("silence_id", rec.SilenceID).Time("silenced_until", rec.SilencedUntil).
			Msg("ending the capture's silence failed; it ends by itself")
		return
	}
	if id != "" {
		rec.SilenceID = id
	}
	rec.SilencedUntil = end
	log.Info().Str("silence_id", rec.SilenceID).Time("silenced_until", end).Msg("capture's silence ends")
}

// Notice is what a requester is told when a capture starts: what it costs the pod.
type Notice struct {
	Pod    string // namespace/pod
	Window time.Duration
	// LastFlush is the last measured stop_profile on this pod (zero: none measured).
	LastFlush   time.Duration
	LastFlushAt time.Time
	// SilenceID is the silence held for the capture, with its page and planned end; empty
	// without alertmanager.url.
	SilenceID     string
	SilenceURL    string
	SilencedUntil time.Time
}

// String is the notice for humans (terminal, Slack), one paragraph.
func (n Notice) String() string {
	s := fmt.Sprintf("Cost: pod %s stops serving while vLLM flushes the trace after the %s window (stop_profile runs in the engine loop; with data parallelism every engine of the pod stalls). ",
		n.Pod, n.Window)
	if n.LastFlush > 0 {
		s += fmt.Sprintf("The last measured flush on this pod took %s (%s). ", n.LastFlush.Round(time.Millisecond), n.LastFlushAt.UTC().Format(time.RFC3339))
	} else {
		s += "No flush was measured on this pod yet: minutes on big models. "
	}
	if n.SilenceID != "" {
		s += fmt.Sprintf("Its vLLM alerts are silenced until %s, extended while the flush runs (silence %s: %s).",
			n.SilencedUntil.UTC().Format(time.RFC3339), n.SilenceID, n.SilenceURL)
	} else {
		s += "No alertmanager.url is configured: the pod's alerts will fire during the capture."
	}
	return s
}
