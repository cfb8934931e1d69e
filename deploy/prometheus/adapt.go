package prometheus

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

func (p Profile) naming() vllmnames.Naming {
	return vllmnames.Naming{Prefix: p.MetricPrefix, RouterLabel: p.RouterLabel}
}

// groupingRE finds the label lists of by (...), without (...), on (...), ignoring (...),
// group_left (...) and group_right (...).
var groupingRE = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)(\s*)\(([^()]*)\)`)

// adapt rewrites the rendered rules for the profile's naming and pod label. The template is
// written with vLLM's own names and groups by (namespace, pod, model_name); each rule's
// expression is rewritten through the PromQL parser (vllmnames: prefix, router exclusion),
// pod in its grouping lists becomes the profile's pod label, and so does $labels.pod in the
// annotations. The expression is replaced in the rendered text, so comments and layout stay.
func (p Profile) adapt(rendered []byte, rf *RulesFile) ([]byte, error) {
	doc := string(rendered)
	cursor := 0
	var errs []error
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			expr := r.Expr
			if p.PodLabel != vllmnames.DefaultPodLabel {
				expr = groupingRE.ReplaceAllStringFunc(expr, func(m string) string {
					sub := groupingRE.FindStringSubmatch(m)
					names := strings.Split(sub[3], ",")
					for i, n := range names {
						if strings.TrimSpace(n) == vllmnames.DefaultPodLabel {
							names[i] = strings.Replace(n, vllmnames.DefaultPodLabel, p.PodLabel, 1)
						}
					}
					return sub[1] + sub[2] + "(" + strings.Join(names, ",") + ")"
				})
			}
			expr, err := p.naming().Rewrite(expr)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.Alert+r.Record, err))
				continue
			}
			if expr == r.Expr {
				continue
			}
			var at int
			doc, at, err = replaceBlock(doc, cursor, r.Expr, expr)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.Alert+r.Record, err))
				continue
			}
			cursor = at
		}
	}
	if p.PodLabel != vllmnames.DefaultPodLabel {
		doc = strings.ReplaceAll(doc, "$labels.pod }}", "$labels."+p.PodLabel+" }}")
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return []byte(doc), nil
}

// replaceBlock replaces the first occurrence at or after from of old, a rule's expression as
// decoded from a literal block scalar (or a plain one-line scalar), with repl at the same
// indentation. It returns the document and the end of the replacement.
func replaceBlock(doc string, from int, old, repl string) (string, int, error) {
	oldLines := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	newLines := strings.Split(strings.TrimSuffix(repl, "\n"), "\n")
	first := regexp.MustCompile(`(?m)^([ \t]*)(expr:[ \t]*)?` + regexp.QuoteMeta(oldLines[0]) + `$`)
	loc := first.FindStringSubmatchIndex(doc[from:])
	if loc == nil {
		return doc, from, errors.New("expression not found in the rendered rules")
	}
	indent := doc[from+loc[2] : from+loc[3]]
	start := from + loc[1] - len(oldLines[0])
	if loc[4] >= 0 { // a one-line "expr: ..." scalar
		if len(oldLines) != 1 {
			return doc, from, errors.New("a multi-line expression in a plain scalar")
		}
		indent = ""
	}
	block := strings.Join(oldLines, "\n"+indent)
	if !strings.HasPrefix(doc[start:], block) {
		return doc, from, errors.New("expression not found as one block in the rendered rules")
	}
	newBlock := strings.Join(newLines, "\n"+indent)
	return doc[:start] + newBlock + doc[start+len(block):], start + len(newBlock), nil
}
