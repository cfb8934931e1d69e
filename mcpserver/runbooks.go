package mcpserver

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// runbooks is what explain_verdict quotes: each verdict's meaning (the README's table) and, per
// playbook page, the "means" column of its verdict table.
type runbooks struct {
	meaning map[string]string
	rows    map[string]map[string]string // playbook -> verdict -> means
}

func loadRunbooks(fsys fs.FS) (runbooks, error) {
	rb := runbooks{meaning: map[string]string{}, rows: map[string]map[string]string{}}
	if fsys == nil {
		return rb, nil
	}
	files, err := fs.Glob(fsys, "playbooks/*.md")
	if err != nil {
		return rb, err
	}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return rb, err
		}
		name := strings.TrimSuffix(path.Base(f), ".md")
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if m := listItem.FindStringSubmatch(line); m != nil && name != "README" {
				// "1. **`kv-preemption`** — condition. What it means." and its indented lines.
				text := m[2]
				for _, more := range lines[i+1:] {
					if !strings.HasPrefix(more, "  ") || strings.TrimSpace(more) == "" {
						break
					}
					text += " " + strings.TrimSpace(more)
				}
				rb.add(name, m[1], strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(text), "—-: ")))
				continue
			}
			cells := tableCells(line)
			if len(cells) < 2 || !strings.HasPrefix(cells[0], "`") {
				continue
			}
			id := strings.Trim(cells[0], "` ")
			if name == "README" {
				rb.meaning[id] = cells[1]
				continue
			}
			if len(cells) >= 3 {
				rb.add(name, id, cells[2])
			}
		}
	}
	return rb, nil
}

// listItem is a verdict in a runbook's list: "1. **`id`**..." or "- **`id`**...".
var listItem = regexp.MustCompile("^\\s*(?:\\d+\\.|-) \\*\\*`([a-z-]+)`[^*]*\\*\\*(.*)$")

// add records the first explanation of a verdict on a playbook's page.
func (rb runbooks) add(playbook, id, text string) {
	if rb.rows[playbook] == nil {
		rb.rows[playbook] = map[string]string{}
	}
	if _, seen := rb.rows[playbook][id]; !seen && text != "" {
		rb.rows[playbook][id] = text
	}
}

// tableCells splits a Markdown table row on its unescaped pipes.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
		return nil
	}
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return cells
}
