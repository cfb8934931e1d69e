package slack

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"
)

// Subcommands of /vllm.
const (
	subTriage  = "triage"
	subProfile = "profile"
	subStatus  = "status"
	subHelp    = "help"
)

// subcommand is one /vllm subcommand. Adding one is one entry in subcommandTable (and the
// function it starts); parsing, the help text, the answer and the commands metric read it.
type subcommand struct {
	name string
	// usage is its line of /vllm help, given the longest capture this responder allows.
	usage func(maxCapture time.Duration) string
	// parse checks the arguments after the name; anything it refuses is a *usageError.
	parse func(args []string) (command, error)
	// args are the arguments as the user could type them again (command.String); nil: none.
	args func(c command) []string
	// start answers at once (well inside Slack's 3 seconds) and starts the work whose result
	// follows through response_url.
	start func(a *app, log zerolog.Logger, cmd slackgo.SlashCommand, c command) *slackgo.Msg
}

// subcommandTable lists the subcommands in the order /vllm help shows them.
func subcommandTable() []subcommand {
	return []subcommand{
		{name: subTriage, parse: parseTriage, args: triageArgs, start: (*app).startTriage,
			usage: func(time.Duration) string {
				return "`/vllm triage [model] [pod]`: run the on-demand triage (`-` for any model)"
			}},
		{name: subProfile, parse: parseProfile, args: profileArgs, start: (*app).startProfile,
			usage: func(maxCapture time.Duration) string {
				return "`/vllm profile <pod> [duration]`: capture a bounded vLLM profile (duration like `10s`, at most `" +
					model.Duration(maxCapture).String() + "`)"
			}},
		{name: subStatus, parse: parseNoArgs(subStatus), start: (*app).startStatus,
			usage: func(time.Duration) string { return "`/vllm status`: captures running and recent incidents" }},
		{name: subHelp, parse: func([]string) (command, error) { return command{Sub: subHelp}, nil },
			start: func(a *app, _ zerolog.Logger, _ slackgo.SlashCommand, _ command) *slackgo.Msg {
				return ephemeral(a.usage)
			},
			usage: func(time.Duration) string { return "`/vllm help`: this text" }},
	}
}

func findSubcommand(name string) (subcommand, bool) {
	for _, s := range subcommandTable() {
		if s.name == name {
			return s, true
		}
	}
	return subcommand{}, false
}

// commandLabels are the label values of the commands metric: one per subcommand, and
// "invalid" for a command that did not parse.
func commandLabels() []string {
	var out []string
	for _, s := range subcommandTable() {
		out = append(out, s.name)
	}
	return append(out, "invalid")
}

// usageText is the help text of /vllm, with the longest capture this responder allows.
func usageText(maxCapture time.Duration) string {
	var b strings.Builder
	b.WriteString("*Usage*")
	for _, s := range subcommandTable() {
		b.WriteString("\n• " + s.usage(maxCapture))
	}
	return b.String()
}

// Limits on what a user may type.
const (
	maxCommandText     = 512
	minProfileDuration = time.Second
	// maxProfileDuration bounds what the parser accepts, whatever profile.max_duration says: a
	// duration above profile.max_duration (appOptions.MaxCapture) passes the parser and is
	// refused by startProfile, which names that key.
	maxProfileDuration = 5 * time.Minute
)

var (
	// Model names: served model names like meta-llama/Llama-3.1-8B-Instruct or qwen2.5:7b.
	modelRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)
	// Pod names: Kubernetes DNS-1123 subdomains.
	podRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
)

// command is a parsed /vllm command. Every field has been validated: it is safe to hand to a
// playbook (which escapes it again) and to show back.
type command struct {
	Sub      string
	Model    string // "" = any
	Pod      string // "" = any (triage); required for profile
	Duration time.Duration
}

// usageError is a command the user got wrong: its message is shown with the usage.
type usageError struct{ Msg string }

func (e *usageError) Error() string { return e.Msg }

func usageErr(format string, args ...any) error {
	return &usageError{Msg: fmt.Sprintf(format, args...)}
}

// isUsageError reports whether err is the user's mistake.
func isUsageError(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}

// validModel reports whether s is an acceptable model name.
func validModel(s string) bool { return modelRe.MatchString(s) }

// validPod reports whether s is an acceptable pod name.
func validPod(s string) bool { return podRe.MatchString(s) }

// parseCommand parses the text after /vllm. It never panics; anything it does not accept is a
// *usageError saying what was wrong.
func parseCommand(text string) (command, error) {
	if len(text) > maxCommandText {
		return command{}, usageErr("the command is too long (%d characters, at most %d)", len(text), maxCommandText)
	}
	args := strings.Fields(text)
	if len(args) == 0 {
		return command{Sub: subHelp}, nil
	}
	sub := strings.ToLower(args[0])
	s, ok := findSubcommand(sub)
	if !ok {
		return command{}, usageErr("unknown subcommand %s", quote(sub))
	}
	return s.parse(args[1:])
}

func parseNoArgs(name string) func([]string) (command, error) {
	return func(args []string) (command, error) {
		if len(args) > 0 {
			return command{}, usageErr("`%s` takes no arguments", name)
		}
		return command{Sub: name}, nil
	}
}

func parseTriage(args []string) (command, error) {
	if len(args) > 2 {
		return command{}, usageErr("`triage` takes at most a model and a pod")
	}
	c := command{Sub: subTriage}
	if len(args) >= 1 && args[0] != "-" {
		if !validModel(args[0]) {
			return command{}, usageErr("%s is not a model name I accept (letters, digits and . _ : / -, at most 128)", quote(args[0]))
		}
		c.Model = args[0]
	}
	if len(args) == 2 {
		if !validPod(args[1]) {
			return command{}, usageErr("%s is not a Kubernetes pod name", quote(args[1]))
		}
		c.Pod = args[1]
	}
	return c, nil
}

func triageArgs(c command) []string {
	var parts []string
	if c.Model != "" || c.Pod != "" {
		parts = append(parts, cmp.Or(c.Model, "-"))
	}
	if c.Pod != "" {
		parts = append(parts, c.Pod)
	}
	return parts
}

func parseProfile(args []string) (command, error) {
	if len(args) == 0 || len(args) > 2 {
		return command{}, usageErr("`profile` takes a pod and an optional duration")
	}
	if !validPod(args[0]) {
		return command{}, usageErr("%s is not a Kubernetes pod name", quote(args[0]))
	}
	c := command{Sub: subProfile, Pod: args[0]}
	if len(args) == 2 {
		d, err := parseDuration(args[1])
		if err != nil {
			return command{}, err
		}
		c.Duration = d
	}
	return c, nil
}

func profileArgs(c command) []string {
	parts := []string{c.Pod}
	if c.Duration > 0 {
		parts = append(parts, c.Duration.String())
	}
	return parts
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
func (c command) String() string {
	parts := []string{c.Sub}
	if s, ok := findSubcommand(c.Sub); ok && s.args != nil {
		parts = append(parts, s.args(c)...)
	}
	return strings.Join(parts, " ")
}

// Labels is the triage scope as alert-like labels.
func (c command) Labels() map[string]string {
	l := map[string]string{}
	if c.Model != "" {
		l["model_name"] = c.Model
	}
	if c.Pod != "" {
		l["pod"] = c.Pod
	}
	return l
}
