package cli

// Usage is the usage text of gatewayd.
const Usage = `Usage:
  gatewayd [run] [--config FILE]        run the daemon (default command)
  gatewayd check-config [--config FILE] validate; print the effective config (secrets redacted)
  gatewayd init [--config FILE] [--env-file FILE] [--telegram-token-file F] [--discord-token-file F]
               [--slack-bot-token-file F --slack-app-token-file F]
               [--matrix-homeserver URL (--matrix-token-file F | --matrix-user U --matrix-password-file F)]
               [--allow-user [PLATFORM:]ID]... [--project NAME=DIR]... [--yes] [--force]
                                        write a config and the token env file (asks in a terminal)
  gatewayd version                      print the version
  gatewayd doctor [--config FILE]       check config, state, codex, its account, tokens, api.listen and who may use it
  gatewayd cluster status [--config FILE]  nodes (heartbeat age), lanes per node, the Telegram poller
  gatewayd chat [--config FILE] [LANE]  talk to a lane through the local API (default lane "default")
  gatewayd send [--config FILE] [--json] LANE [TEXT...]
                                        send one message (TEXT, else stdin) to the API lane LANE of the
                                        running daemon; print the reply (--json: the whole answer)
  gatewayd sessions list [--config FILE] [--limit N]
  gatewayd sessions show KEY [--config FILE] [--limit N]
  gatewayd sessions search TEXT... [--config FILE] [--limit N]
                                        full-text search of every lane's transcripts
  gatewayd sessions reset KEY [--config FILE]
                                        reset = /reset in the lane; goes through the running daemon
  gatewayd worktrees prune [--config FILE]
                                        remove now the worktrees kept past lanes.worktree_retention

Configuration: --config FILE, else $GATEWAYD_CONFIG, else ~/.config/gatewayd/gatewayd.yaml or
/etc/gatewayd/gatewayd.yaml if present; every key can be set as GATEWAYD_<KEY> (dots → "_").

Exit codes:
  0  success (run: clean shutdown after SIGTERM/SIGINT)
  1  runtime failure (store, app-server, platform or network error; forced exit on a second signal;
     doctor: a check failed; send: the turn did not complete or the daemon is unreachable)
  2  configuration or usage error (also: a platform rejected its bot token)
`
