// Package docs embeds the runbooks (docs/playbooks/*.md) for the programs that quote them: the
// MCP server's explain_verdict reads a verdict's meaning and rules from them.
package docs

import "embed"

// Runbooks holds playbooks/*.md.
//
//go:embed playbooks/*.md
var Runbooks embed.FS
