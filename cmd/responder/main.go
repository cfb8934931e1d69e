// Command responder receives Alertmanager webhooks for vLLM alerts, runs the matching playbook
// against Prometheus and posts the diagnosis to Slack (or the console).
//
//	responder [serve] --config FILE          run the service (default)
//	responder triage --config FILE [...]     run a playbook once and print the diagnosis
//	responder check --config FILE            validate the config and every playbook
//	responder playbooks test [--config FILE] DIR...   run playbook fixtures
//	responder mcp --config FILE              serve the read-only MCP tools on stdio
//	responder profile --config FILE --pod P  capture a bounded vLLM profile
//	responder version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Set by the build (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: responder <command> [flags]

commands:
  serve            run the service (default): POST /alertmanager, /slack/commands, /slack/interactions
  triage           run the playbook for an alert (or the on-demand triage) once and print the diagnosis
  check            validate the configuration and every playbook, print what was loaded
  playbooks test   run playbook fixtures (*_test.yaml) with expected verdicts
  mcp              serve the read-only MCP tools (triage, list_playbooks, recent_diagnoses, explain_verdict) on stdio
  profile          capture a bounded vLLM profile of one pod
  version          print the version

Run 'responder <command> -h' for a command's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] != "" && args[0][0] != '-') {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, stdout, stderr)
	case "triage":
		return runTriage(ctx, args, stdout, stderr)
	case "check":
		return runCheck(args, stdout, stderr)
	case "playbooks":
		if len(args) == 0 || args[0] != "test" {
			fmt.Fprintln(stderr, "usage: responder playbooks test [--config FILE] DIR...")
			return 2
		}
		return runPlaybooksTest(args[1:], stdout, stderr)
	case "mcp":
		return runMCP(ctx, args, os.Stdin, stdout, stderr)
	case "profile":
		return runProfile(ctx, args, stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "responder %s\n", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "responder: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}
