// Command gatewayd lets people talk to the Codex agent from Discord threads,
// Telegram forum topics and a local HTTP API, and keeps every conversation
// across restarts.
//
// Usage:
//
//	gatewayd [run] [--config FILE]      run the daemon (the default command)
//	gatewayd check-config [--config FILE]
//	                                     validate and print the effective config, secrets redacted
//	gatewayd version                     print the version
//	gatewayd chat [--config FILE] [LANE] talk to a lane through the local API (default lane "default")
//	gatewayd send [--json] LANE [TEXT]   one turn through the running daemon's API lane; prints the reply
//	gatewayd sessions list|show KEY|search TEXT|reset KEY [--config FILE]
//	                                     inspect lanes; reset = /reset in the lane, safe while the daemon runs
//
// Exit codes:
//
//	0  success (for run: a clean shutdown after SIGTERM/SIGINT)
//	1  runtime failure (store, app-server, platform or network error; a forced exit on a second signal)
//	2  configuration or usage error (the message names the key or the flag),
//	   also a bot token the platform rejects at run time: restarting cannot fix it
//
// The work lives in Run so tests drive it without a process; main only maps
// the result to the exit status.
package main

import (
	"context"
	"os"
)

func main() {
	tuneProcs = true
	raiseTimerSlack(os.Args[1:])
	os.Exit(Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
