// Package loadgen measures gatewayd's own cost under load. Its test
// TestLoad builds the real gatewayd binary, points its Telegram adapter at
// the in-repo fake Bot API (platforms/telegram/telegramtest) and its codex
// at the real pinned app-server talking to an instant fake model
// (runtime/codex/codextest), then drives N private chats closed-loop (each
// lane sends its next message when the reply to the last one arrived) and
// reports messages per second, latency percentiles from the platform
// message to the reply seen by the fake, and the CPU time (with its system
// share) and RSS of gatewayd and of its app-server tree read from /proc.
// -idle-after measures gatewayd's idle CPU with every lane still live, the
// background share of the per-message figure. -gatewayd-bin runs a
// prebuilt binary instead of building this tree, so that before and after
// builds can be run alternately on a machine whose load moves.
//
//	go test ./tools/loadgen -run 'TestLoad$' -v -load -lanes=200 -messages=5
//
// Without -load only TestLoadSmoke (3 lanes) runs, which is what `make test`
// sees. `make bench` runs a small load.
package loadgen
