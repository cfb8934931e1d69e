package mcpserver

import (
	"io/fs"
	"path"
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
		for _, line := range strings.Split(string(b), "\n") {
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
				if rb.rows[name] == nil {
					rb.rows[name] = map[string]string{}
				}
				if _, seen := rb.rows[name][id]; !seen {
					rb.rows[name][id] = cells[2]
				}
			}
		}
	}
	return rb, nil
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
