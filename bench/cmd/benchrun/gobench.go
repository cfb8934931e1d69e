package main

import (
	"fmt"
	"os/exec"
	"strings"
)

type goBench struct {
	pkg, name               string
	nsOp, bytesOp, allocsOp string
}

// runGoBenchmarks runs the packages' Benchmark functions (-benchmem) and parses their lines.
func runGoBenchmarks(repo, benchtime string) ([]goBench, error) {
	pkgs := []string{"./playbooks", "./notify/slack", "./bench"}
	args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", benchtime, "-count", "1"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
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
