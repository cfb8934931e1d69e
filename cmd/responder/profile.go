package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	cfgpkg "github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/profile"
)

// runProfile: `responder profile --config FILE --pod P [--duration 10s]`. One flag set holds
// the config's flag and profile's (profile.CLIFlags), so every form the flag package reads
// works: -config X, -config=X, --config X, --config=X.
func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (required)")
	var pf profile.CLIFlags
	pf.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, profile.CLIUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *cfgPath == "" || pf.Pod == "" || fs.NArg() > 0 {
		fs.Usage()
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
	return profile.RunCLI(ctx, svc, pf, stdout, stderr)
}

// newCaptureSilencer is the Alertmanager client that silences a captured pod's alerts; nil
// without alertmanager.url (the pod's alerts then fire, and the requester is told so).
func newCaptureSilencer(c *cfgpkg.Config) (profile.Silencer, error) {
	s, err := newAlertmanagerClient(c)
	if s == nil {
		return nil, err // a nil *silence.Client would be a non-nil interface
	}
	return s, nil
}
