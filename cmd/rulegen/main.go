// Command rulegen renders the vLLM Prometheus alert rules for one profile of
// deploy/prometheus/profiles.yaml (production, fast, ...).
//
//	go run ./cmd/rulegen -profile fast -o /tmp/vllm-alerts.fast.rules.yml
//	go run ./cmd/rulegen -profile fast -set alerts.queue.threshold=5 -set rate_window=1m
//	go run ./cmd/rulegen -profile production -check deploy/prometheus/vllm-alerts.rules.yml
//
// Without -o the rules go to standard output.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	rules "github.com/vllm-responder/vllm-responder/deploy/prometheus"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rulegen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("profile", "production", "profile of deploy/prometheus/profiles.yaml to render")
	out := fs.String("o", "", "write the rules to this file instead of standard output")
	check := fs.String("check", "", "compare the rendering with this file and exit 1 if it differs (stale)")
	list := fs.Bool("list", false, "list the profiles and exit")
	var sets multiFlag
	fs.Var(&sets, "set", "override one parameter, e.g. alerts.ttft.threshold=2.5 (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rulegen [-profile NAME] [-set key=value]... [-o FILE | -check FILE] | -list")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rulegen: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *out != "" && *check != "" {
		fmt.Fprintln(stderr, "rulegen: -o and -check are exclusive")
		return 2
	}
	if *list {
		names, err := rules.ProfileNames()
		if err != nil {
			fmt.Fprintf(stderr, "rulegen: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, strings.Join(names, "\n"))
		return 0
	}

	p, err := rules.LoadProfile(*profile, sets...)
	if err != nil {
		fmt.Fprintf(stderr, "rulegen: %v\n", err)
		return 1
	}
	for _, w := range p.Warnings() {
		fmt.Fprintf(stderr, "rulegen: warning: %s\n", w)
	}
	b, err := rules.Render(p)
	if err != nil {
		fmt.Fprintf(stderr, "rulegen: %v\n", err)
		return 1
	}

	switch {
	case *check != "":
		have, err := os.ReadFile(*check)
		if err != nil {
			fmt.Fprintf(stderr, "rulegen: %v\n", err)
			return 1
		}
		if !bytes.Equal(have, b) {
			fmt.Fprintf(stderr, "rulegen: %s is stale for profile %q: run go generate ./deploy/prometheus\n", *check, *profile)
			return 1
		}
		return 0
	case *out != "":
		if err := writeFile(*out, b); err != nil {
			fmt.Fprintf(stderr, "rulegen: %v\n", err)
			return 1
		}
		return 0
	default:
		if _, err := stdout.Write(b); err != nil {
			fmt.Fprintf(stderr, "rulegen: %v\n", err)
			return 1
		}
		return 0
	}
}

// writeFile replaces path atomically, so a reader (or a Prometheus reload) never sees half a file.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".rulegen-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
