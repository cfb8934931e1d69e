package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

type goBench struct {
	pkg, name               string
	nsOp, bytesOp, allocsOp string
}

// runGoBenchmarks runs the packages' Benchmark functions (-benchmem) and parses their lines,
// killed at deadline (building them included).
func runGoBenchmarks(repo, benchtime string, deadline time.Time) ([]goBench, error) {
	pkgs := []string{"./playbooks", "./notify/slack", "./bench"}
	args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", benchtime, "-count", "1"}, pkgs...)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("go test -bench: not done within its phase (%s)", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("go test -bench: %v\n%s", err, out)
	}
	var res []goBench
	pkg := ""
	for _, l := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(l, "pkg: "); ok {
			pkg = strings.TrimPrefix(strings.TrimPrefix(p, "github.com/vllm-responder/vllm-responder"), "/")
			if pkg == "" {
				pkg = "."
			}
			continue
		}
		f := strings.Fields(l)
		if len(f) < 8 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		b := goBench{pkg: pkg, name: f[0]}
		for i := 2; i+1 < len(f); i += 2 {
			switch f[i+1] {
			case "ns/op":
				b.nsOp = f[i]
			case "B/op":
				b.bytesOp = f[i]
			case "allocs/op":
				b.allocsOp = f[i]
			}
		}
		res = append(res, b)
	}
	return res, nil
}
