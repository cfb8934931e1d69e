package slack

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Subcommands of /vllm.
const (
	SubTriage  = "triage"
	SubProfile = "profile"
	SubStatus  = "status"
	SubHelp    = "help"
)

// UsageText is the help text of /vllm, with the longest capture this responder allows.
func UsageText(maxCapture time.Duration) string {
	return "*Usage*\n" +
		"• `/vllm triage [model] [pod]`: run the on-demand triage (`-` for any model)\n" +
		"• `/vllm profile <pod> [duration]`: capture a bounded vLLM profile (duration like `10s`, at most `" +
		model.Duration(maxCapture).String() + "`)\n" +
		"• `/vllm status`: captures running and recent incidents\n" +
		"• `/vllm help`: this text"
}

// Limits on what a user may type.
const (
	maxCommandText     = 512
	minProfileDuration = time.Second
	maxProfileDuration = 5 * time.Minute // whatever profile.max_duration says
)

var (
	// Model names: served model names like meta-llama/Llama-3.1-8B-Instruct or qwen2.5:7b.
	modelRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)
	// Pod names: Kubernetes DNS-1123 subdomains.
	podRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
)

// Command is a parsed /vllm command. Every field has been validated: it is safe to hand to a
// playbook (which escapes it again) and to show back.
type Command struct {
	Sub      string
	Model    string // "" = any
	Pod      string // "" = any (triage); required for profile
	Duration time.Duration
}

// UsageError is a command the user got wrong: its message is shown with the usage.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usageErr(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// IsUsageError reports whether err is the user's mistake.
func IsUsageError(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// ValidModel reports whether s is an acceptable model name.
func ValidModel(s string) bool { return modelRe.MatchString(s) }

// ValidPod reports whether s is an acceptable pod name.
func ValidPod(s string) bool { return podRe.MatchString(s) }

// ParseCommand parses the text after /vllm. It never panics; anything it does not accept is a
// *UsageError saying what was wrong.
func ParseCommand(text string) (Command, error) {
	if len(text) > maxCommandText {
		return Command{}, usageErr("the command is too long (%d characters, at most %d)", len(text), maxCommandText)
	}
	args := strings.Fields(text)
	if len(args) == 0 {
		return Command{Sub: SubHelp}, nil
	}
	sub := strings.ToLower(args[0])
	args = args[1:]
	switch sub {
	case SubHelp:
		return Command{Sub: SubHelp}, nil
	case SubStatus:
		if len(args) > 0 {
			return Command{}, usageErr("`status` takes no arguments")
		}
		return Command{Sub: SubStatus}, nil
	case SubTriage:
		if len(args) > 2 {
			return Command{}, usageErr("`triage` takes at most a model and a pod")
		}
		c := Command{Sub: SubTriage}
		if len(args) >= 1 && args[0] != "-" {
			if !ValidModel(args[0]) {
				return Command{}, usageErr("%s is not a model name I accept (letters, digits and . _ : / -, at most 128)", quote(args[0]))
			}
			c.Model = args[0]
		}
		if len(args) == 2 {
			if !ValidPod(args[1]) {
				return Command{}, usageErr("%s is not a Kubernetes pod name", quote(args[1]))
			}
			c.Pod = args[1]
		}
		return c, nil
	case SubProfile:
		if len(args) == 0 || len(args) > 2 {
			return Command{}, usageErr("`profile` takes a pod and an optional duration")
		}
		if !ValidPod(args[0]) {
			return Command{}, usageErr("%s is not a Kubernetes pod name", quote(args[0]))
		}
		c := Command{Sub: SubProfile, Pod: args[0]}
		if len(args) == 2 {
			d, err := parseDuration(args[1])
			if err != nil {
				return Command{}, err
			}
			c.Duration = d
		}
		return c, nil
	default:
		return Command{}, usageErr("unknown subcommand %s", quote(sub))
	}
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		// A bare number is seconds.
		n, nerr := strconv.Atoi(s)
		if nerr != nil || n > 1e6 {
			return 0, usageErr("%s is not a duration (like 10s or 1m)", quote(s))
		}
		d = time.Duration(n) * time.Second
	}
	if d < minProfileDuration || d > maxProfileDuration {
		return 0, usageErr("the duration must be between %s and %s", minProfileDuration, maxProfileDuration)
	}
	return d, nil
}

// quote shows user input back safely: shortened, in code, without characters Slack would read
// as markup.
func quote(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '`' || r == '<' || r == '>' || r == '&' || r == '*' || r == '_' || r == '~':
			return '?'
		case r < 0x20 || r == 0x7f:
			return -1
		}
		return r
	}, s)
	return "`" + s + "`"
}

// String is the command as the user could type it again.
func (c Command) String() string {
	parts := []string{c.Sub}
	switch c.Sub {
	case SubTriage:
		if c.Model != "" || c.Pod != "" {
			parts = append(parts, cmpOr(c.Model, "-"))
		}
		if c.Pod != "" {
			parts = append(parts, c.Pod)
		}
	case SubProfile:
		parts = append(parts, c.Pod)
		if c.Duration > 0 {
			parts = append(parts, c.Duration.String())
		}
	}
	return strings.Join(parts, " ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Labels is the triage scope as alert-like labels.
func (c Command) Labels() map[string]string {
	l := map[string]string{}
	if c.Model != "" {
		l["model_name"] = c.Model
	}
	if c.Pod != "" {
		l["pod"] = c.Pod
	}
	return l
}
