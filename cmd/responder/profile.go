package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	cfgpkg "github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/profile"
	"github.com/vllm-responder/vllm-responder/silence"
)

// runProfile: `responder profile --config FILE --pod P [--duration 10s]`. The config's own flags
// are parsed here; the rest go to profile.RunCLI.
func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgPath := fs.String("config", "", "configuration file (required)")
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--config" || a == "-config":
			if i+1 < len(args) {
				*cfgPath = args[i+1]
				i++
			}
		case len(a) > 9 && (a[:9] == "--config=" || a[:8] == "-config="):
			_ = fs.Parse([]string{a})
		default:
			rest = append(rest, a)
		}
	}
	if *cfgPath == "" {
		fmt.Fprintln(stderr, "usage: responder profile --config FILE --pod POD [--duration 10s]")
		return 2
	}
	c, err := cfgpkg.Load(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log := newLogger(c.Log, stderr)
	promAPI, err := newPrometheusAPI(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	st, _, err := newStore(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer st.Close()
	silencer, err := newCaptureSilencer(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	svc, err := profile.New(c.Profile, profile.Deps{Prometheus: promAPI, Store: st, Silencer: silencer, Logger: log.Level(zerolog.WarnLevel), Naming: c.VLLM.Naming(), PodLabel: c.VLLM.PodLabel})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return profile.RunCLI(ctx, svc, rest, stdout, stderr)
}

// newCaptureSilencer is the Alertmanager client that silences a captured pod's alerts; nil
// without alertmanager.url (the pod's alerts then fire, and the requester is told so).
func newCaptureSilencer(c *cfgpkg.Config) (profile.Silencer, error) {
	if c.Alertmanager.URL == "" {
		return nil, nil
	}
	s, err := silence.New(c.Alertmanager.URL, nil, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("alertmanager.url: %w", err)
	}
	return s, nil
}
