package notify

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The text helpers every integration shares: what a label may show (Printable), what may become
// a link (HTTPURL), how long things lasted (HumanDuration) and how text is cut (Truncate).

// Printable makes the invisible characters of label text visible, so that what a message shows
// is what the label holds: every format character (Unicode category Cf: the bidirectional
// overrides and isolates such as U+202E, which show "vllm\u202egnp.exe" as "vllmexe.png", the
// zero-width space U+200B and joiners, the BOM, tag characters), every control character, and
// the line and paragraph separators become "<U+202E>". Label values are one line: a newline or a
// tab in one is shown too.
func Printable(s string) string { return visible(s, false) }

// printableText is Printable for text of several lines (a summary, a note): newlines and tabs
// stay.
func printableText(s string) string { return visible(s, true) }

func visible(s string, lines bool) string {
	if !hasHidden(s, lines) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				b.WriteRune(utf8.RuneError) // an invalid byte: shown as U+FFFD, as JSON would
				continue
			}
		}
		if hidden(r, lines) {
			fmt.Fprintf(&b, "<U+%04X>", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hasHidden(s string, lines bool) bool {
	for _, r := range s {
		if hidden(r, lines) || r == utf8.RuneError {
			return true
		}
	}
	return false
}

// hidden reports whether r shows as nothing (or moves the text around it) in a message.
func hidden(r rune, lines bool) bool {
	if lines && (r == '\n' || r == '\t') {
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Zl, unicode.Zp)
}

// HTTPURL returns u when it is an absolute http(s) URL with a host, and "" otherwise: only such
// a URL becomes a link or an action in any integration (a javascript: or data: URL from an
// alert's generatorURL, an annotation or Alertmanager's externalURL never does).
func HTTPURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return strings.TrimSpace(u)
}

// Truncate cuts s to at most n runes, marking the cut with an ellipsis.
func Truncate(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// HumanDuration prints a duration the way an engineer says it: 42s, 23m, 1h 5m, 2d 3h.
func HumanDuration(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) - 60*h; m > 0 {
			return fmt.Sprintf("%dh %dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	default:
		days := int(d.Hours()) / 24
		return fmt.Sprintf("%dd %dh", days, int(d.Hours())-24*days)
	}
}
