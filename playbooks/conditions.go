package playbooks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	exprparser "github.com/expr-lang/expr/parser"
)

// Named conditions (the `conditions:` section) are snippets of a rule's condition with a name,
// as Falco's macros are: a rule's when reads the name and the compiler writes the snippet in its
// place before the condition is compiled, so the rule decides, and names what it could not
// decide, exactly as if the snippet had been written there; its compiled When shows it so. A
// fragment's rules may read a condition that each playbook using it defines its own way (what
// "past the knee" means for the TTFT alert and for the queue alert).

// compileConditions records the named conditions and checks each one alone: a boolean
// expression over the playbook's names (other named conditions included).
func compileConditions(el *errList, p *Playbook, conds orderedTemplates, names map[string]string) {
	p.conditions = map[string]string{}
	for _, c := range conds {
		el := el.from(c.Source)
		if !claimName(el, "conditions."+c.Name, c.Name, "condition", names) {
			continue
		}
		p.conditions[c.Name] = strings.TrimSpace(c.Text)
	}
	env := exprEnv(p)
	for _, c := range conds {
		text, ok := p.conditions[c.Name]
		if !ok || text == "" {
			if ok {
				el.from(c.Source).add("conditions."+c.Name, "empty condition")
			}
			continue
		}
		full, err := p.expandConditions(text)
		if err == nil {
			_, err = expr.Compile(full, expr.Env(env), expr.AsBool())
		}
		if err != nil {
			el.from(c.Source).add("conditions."+c.Name, "%s", exprError(err))
		}
	}
}

// expandConditions writes every named condition src reads in its place, in parentheses unless
// the result reads the same without them (a conjunction among conjunctions).
func (p *Playbook) expandConditions(src string) (string, error) {
	return p.expandConditionsIn(src, nil)
}

func (p *Playbook) expandConditionsIn(src string, within []string) (string, error) {
	if len(p.conditions) == 0 {
		return src, nil
	}
	tree, err := exprparser.Parse(src)
	if err != nil {
		return src, nil // the condition's own error is reported when it is compiled
	}
	type use struct {
		from, to int
		name     string
	}
	var uses []use
	ast.Find(tree.Node, func(n ast.Node) bool {
		if id, ok := n.(*ast.IdentifierNode); ok {
			if _, named := p.conditions[id.Value]; named {
				loc := id.Location()
				uses = append(uses, use{loc.From, loc.To, id.Value})
			}
		}
		return false
	})
	if len(uses) == 0 {
		return src, nil
	}
	slices.SortFunc(uses, func(a, b use) int { return a.from - b.from })
	runes := []rune(src)
	var b strings.Builder
	last := 0
	for _, u := range uses {
		if slices.Contains(within, u.name) {
			return "", fmt.Errorf("condition %s reads itself (%s)", u.name, strings.Join(append(within, u.name), " -> "))
		}
		body, err := p.expandConditionsIn(p.conditions[u.name], append(slices.Clone(within), u.name))
		if err != nil {
			return "", err
		}
		b.WriteString(string(runes[last:u.from]))
		if bareIn(string(runes[:u.from]), string(runes[u.to:]), body) {
			b.WriteString(body)
		} else {
			b.WriteString("(" + body + ")")
		}
		last = u.to
	}
	b.WriteString(string(runes[last:]))
	return b.String(), nil
}

// bareIn reports whether body, written between before and after, reads as one operand without
// parentheses: it stands alone or in parentheses already, or it is a conjunction (or binds
// tighter) between && operators.
func bareIn(before, after, body string) bool {
	before, after = strings.TrimSpace(before), strings.TrimSpace(after)
	open := before == "" || strings.HasSuffix(before, "(")
	closed := after == "" || strings.HasPrefix(after, ")")
	if open && closed {
		return true
	}
	if !(open || strings.HasSuffix(before, "&&")) || !(closed || strings.HasPrefix(after, "&&")) {
		return false
	}
	tree, err := exprparser.Parse(body)
	if err != nil {
		return false
	}
	switch n := tree.Node.(type) {
	case *ast.ConditionalNode:
		return false
	case *ast.BinaryNode:
		switch n.Operator {
		case "||", "or", "??":
			return false
		}
	}
	return true
}
