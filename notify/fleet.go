package notify

import (
	"fmt"
	"strings"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// Fleet is a diagnosis' comparison of its pod with the pod's siblings, as shown.
type Fleet struct {
	// Headline is the line above it: "this pod alone (1 of 3 pods) · model_name=m namespace=ns",
	// with the pod chosen when the alert named none.
	Headline string
	// By is what a row is (pod, or engine for the data-parallel engines of one pod); Columns
	// are the titles of the values.
	By      string
	Columns []string
	// Rows are one pod each, the focus pod first; Ranks are the focus pod's data-parallel
	// engines, when it has several.
	Rows, Ranks []FleetRow
}

// FleetRow is one pod (or engine): its name (with its role in disaggregated serving), its
// values, and whether it is the pod in focus and whether it is affected.
type FleetRow struct {
	Name            string
	Texts           []string
	Focus, Affected bool
}

func newFleet(v *playbooks.FleetView) *Fleet {
	if v == nil || len(v.Rows) == 0 {
		return nil
	}
	f := &Fleet{Headline: printableText(fleetHeadline(v)), By: v.By}
	for _, c := range v.Columns {
		f.Columns = append(f.Columns, printableText(c.Title))
	}
	row := func(r playbooks.FleetRow) FleetRow {
		name := Printable(r.Pod)
		if r.Role != "" {
			name += " (" + Printable(r.Role) + ")"
		}
		return FleetRow{Name: name, Texts: printableAll(r.Texts), Focus: r.Focus, Affected: r.Affected}
	}
	for _, r := range v.Rows {
		f.Rows = append(f.Rows, row(r))
	}
	for _, r := range v.Ranks {
		f.Ranks = append(f.Ranks, row(r))
	}
	return f
}

// fleetHeadline is the headline of v.
func fleetHeadline(v *playbooks.FleetView) string {
	s := v.Scope
	if v.FocusChosen && v.Focus != "" {
		s = fmt.Sprintf("worst %s %s: %s", v.By, v.Focus, s)
	}
	for i, l := range sortedLabels(v.Siblings) {
		sep := " "
		if i == 0 {
			sep = " · "
		}
		s += sep + l.Name + "=" + l.Value
	}
	return s
}

// mark is the row's mark in a table: ">" for the pod in focus, "!" for an affected pod.
func (r FleetRow) mark() string {
	switch {
	case r.Focus && r.Affected:
		return ">!"
	case r.Focus:
		return "> "
	case r.Affected:
		return " !"
	}
	return "  "
}

// Table is the comparison as aligned plain-text lines: a header, then one line per pod (the
// focus pod first, marked ">", affected pods "!", the focus pod's data-parallel engines under
// it), at most maxRows pods, and a last line that says how many more there are. Integrations
// show it as it is (Slack in a code block, the console indented).
func (f *Fleet) Table(maxRows int) []string {
	if f == nil || len(f.Rows) == 0 {
		return nil
	}
	rows := f.Rows
	if maxRows > 0 && len(rows) > maxRows {
		rows = rows[:maxRows]
	}
	cells := [][]string{append([]string{f.By}, f.Columns...)}
	marks := []string{"  "}
	for _, r := range rows {
		cells = append(cells, append([]string{r.Name}, r.Texts...))
		marks = append(marks, r.mark())
		if r.Focus {
			for _, rk := range f.Ranks {
				cells = append(cells, append([]string{"  engine " + rk.Name}, rk.Texts...))
				marks = append(marks, "  ")
			}
		}
	}
	width := make([]int, len(cells[0]))
	for _, l := range cells {
		for i, c := range l {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	out := make([]string, 0, len(cells)+1)
	for i, l := range cells {
		var b strings.Builder
		b.WriteString(marks[i] + " ")
		for j, c := range l {
			pad := 0
			if j < len(width) {
				pad = width[j] - len([]rune(c))
			}
			if j == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString("  " + strings.Repeat(" ", pad) + c)
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	if n := len(f.Rows) - len(rows); n > 0 {
		more := 0
		for _, r := range f.Rows[len(rows):] {
			if r.Affected {
				more++
			}
		}
		out = append(out, fmt.Sprintf("   … %d more %ss (%d of them affected)", n, f.By, more))
	}
	return out
}
