package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/stack"
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
	c, err := stack.LoadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	st, err := stack.New(c, stack.Options{Logs: stderr, Store: true})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer st.Close()
	silencer, err := newSilencer(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	svc, err := profile.New(c.Profile, profile.Deps{Prometheus: st.Prometheus, Store: st.Store, Silencer: silencer, Logger: st.Log.Level(zerolog.WarnLevel), Naming: st.Naming})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return profile.RunCLI(ctx, svc, pf, stdout, stderr)
}
