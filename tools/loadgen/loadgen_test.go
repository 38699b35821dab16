package loadgen

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/internal/timerslack"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

var (
	load       = flag.Bool("load", false, "run TestLoad (off in `make test`)")
	lanes      = flag.Int("lanes", 200, "private chats driven at once")
	messages   = flag.Int("messages", 5, "messages per lane, each sent when the last was answered")
	concurrent = flag.Int("max-concurrent-turns", 0, "lanes.max_concurrent_turns (0: the daemon's default)")
	logLevel   = flag.String("log-level", "info", "gatewayd's log.level")
	limit      = flag.Duration("limit", 10*time.Minute, "give up when the load has not finished by then")
	keepLog    = flag.String("keep-log", "", "copy gatewayd's output to this file when the test ends")
	maxLive    = flag.Int("max-live", 0, "lanes.max_live (0: lanes+10, so no lane is released during the load)")
	settle     = flag.Duration("settle", 0, "after the load, wait this long and report the app-server tree's RSS again")
	known      = flag.Int("known", 10_000, "TestKnownLanes: lanes in the database before start")
	active     = flag.Int("active", 1_000, "TestKnownLanes: of them, active within the last hour")
	daemonProf = flag.String("daemon-cpuprofile", "", "TestLoad: write gatewayd's CPU profile of the run to this file")
	traceOut   = flag.String("daemon-trace", "", "TestLoad: write a Go execution trace of gatewayd's run to this file (go tool trace)")
	daemonBin  = flag.String("gatewayd-bin", "", "TestLoad: run this gatewayd binary instead of building one from this tree (to alternate before/after builds)")
	timerSlack = flag.Duration("timer-slack", 0, "TestLoad: start gatewayd with this timer slack, as systemd's TimerSlackNSec= does (0: inherit this process's; gatewayd raises the kernel's default 50µs to 1ms itself)")
	replyWords = flag.Int("reply-words", 0, "TestLoad: the fake model adds this many words to each echo and streams the reply one delta per word, as a real model does (0: the echo in one delta)")
	idleAfter  = flag.Duration("idle-after", 0, "TestLoad: after the load, measure gatewayd's idle CPU with every lane live for this long")
)

// TestLoad drives -lanes chats with -messages each and logs the figures.
func TestLoad(t *testing.T) {
	if !*load {
		t.Skip("pass -load to run the load (make bench does)")
	}
	var env []string
	if *daemonProf != "" {
		env = append(env, "GATEWAYD_CPUPROFILE="+*daemonProf)
	}
	if *traceOut != "" {
		env = append(env, "GATEWAYD_TRACE="+*traceOut)
	}
	r := runLoad(t, options{lanes: *lanes, messages: *messages, concurrent: *concurrent, maxLive: *maxLive,
		logLevel: *logLevel, limit: *limit, env: env, replyWords: *replyWords})
	if *idleAfter > 0 {
		r.measureIdleAfter(t, *idleAfter)
	}
	r.log(t)
	if *settle > 0 {
		// thread/unsubscribe does not unload a thread at once (docs/codex-app-server.md §2):
		// what the tree keeps once codex had time to let go.
		time.Sleep(*settle)
		u, err := Measure(r.pid)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("loadgen: after %v idle: rss gatewayd=%.1f MB app-server tree=%.1f MB", *settle, mb(u.GatewayRSS), mb(u.ChildRSS))
	}
}

// TestLoadSmoke proves the tool works end to end on a tiny load: every
// message of every lane gets its own reply, and the figures are filled.
func TestLoadSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	r := runLoad(t, options{lanes: 3, messages: 2, logLevel: "info", limit: 3 * time.Minute})
	if got, want := len(r.latencies), 6; got != want {
		t.Fatalf("replies %d, want %d", got, want)
	}
	if r.wall <= 0 || r.latencies[0] <= 0 {
		t.Errorf("wall %v, first latency %v: want both > 0", r.wall, r.latencies[0])
	}
	if r.after.GatewayRSS <= 0 || r.after.ChildRSS <= 0 {
		t.Errorf("RSS gatewayd %d, app-server tree %d: want both > 0 (is the app-server a child?)",
			r.after.GatewayRSS, r.after.ChildRSS)
	}
	r.log(t)
}

type options struct {
	lanes, messages, concurrent int
	maxLive                     int
	logLevel                    string
	limit                       time.Duration
	env                         []string // extra environment for gatewayd
	replyWords                  int      // words after the echo, one streamed delta each
}

// result is one load's figures.
type result struct {
	opts          options
	pid           int           // gatewayd's
	wall          time.Duration // first message queued to last reply seen
	latencies     []time.Duration
	before, after Usage
	idle          time.Duration // gatewayd's CPU over idleWindow before the load
	idleAfter     time.Duration // gatewayd's CPU over idleAfterFor after the load, every lane live
	idleAfterFor  time.Duration
	self          time.Duration // this process's CPU during the load: the fakes and the driver
	calls         []string      // Bot API requests gatewayd made, by method
}

const idleWindow = 2 * time.Second

// laneState is one private chat driven closed-loop.
type laneState struct {
	chat   models.Chat
	user   models.User
	sent   int       // messages sent so far
	want   string    // the reply awaited, "" when done
	sentAt time.Time // when the awaited message was queued
}

func runLoad(t *testing.T, o options) *result {
	tg := telegramtest.New(t)
	model := codextest.NewModel(t)
	if o.replyWords > 0 {
		model.Respond(func(req codextest.Request) codextest.Reply {
			r := codextest.DefaultReply(req)
			r.Text += filler(o.replyWords)
			r.Chunks = 1 + o.replyWords
			return r
		})
	}
	d := startGateway(t, tg, model, o, t.TempDir())
	tg.WaitFor(2*time.Minute, "gatewayd polling getUpdates", func() bool { return tg.Calls("getUpdates") > 0 })
	idleFrom, err := Measure(d.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// Idle cost: what gatewayd burns with nothing to do (timers, polling),
	// which the per-message figure includes for the length of the run.
	time.Sleep(idleWindow)
	before, err := Measure(d.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	ls := make(map[int64]*laneState, o.lanes)
	selfBefore, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r := &result{opts: o, pid: d.Process.Pid, before: before, idle: before.GatewayCPU - idleFrom.GatewayCPU}
	start := time.Now()
	for i := range o.lanes {
		id := int64(10_001 + i)
		l := &laneState{chat: models.Chat{ID: id, Type: models.ChatTypePrivate},
			user: models.User{ID: id, FirstName: "load" + strconv.Itoa(i)}}
		ls[id] = l
		sendNext(tg, l, o.replyWords)
	}
	pending := o.lanes
	tg.WaitFor(o.limit, "every reply", func() bool {
		now := time.Now()
		for _, m := range tg.AllMessages() {
			l := ls[m.ChatID]
			if l == nil || l.want == "" || m.Text != l.want {
				continue
			}
			r.latencies = append(r.latencies, now.Sub(l.sentAt))
			if l.sent == o.messages {
				l.want = ""
				pending--
				continue
			}
			sendNext(tg, l, o.replyWords)
		}
		return pending == 0
	})
	r.wall = time.Since(start)
	selfAfter, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r.self = selfAfter.CPU - selfBefore.CPU
	for _, m := range []string{"sendMessage", "sendMessageDraft", "editMessageText", "sendChatAction", "getUpdates"} {
		r.calls = append(r.calls, fmt.Sprintf("%s=%d", m, tg.Calls(m)))
	}
	if r.after, err = Measure(d.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return r
}

// sendNext queues the lane's next message; the fake model echoes it,
// followed by replyWords words.
func sendNext(tg *telegramtest.Server, l *laneState, replyWords int) {
	l.sent++
	text := fmt.Sprintf("m%d-%d", l.chat.ID, l.sent)
	l.want = "ECHO: " + text + filler(replyWords)
	l.sentAt = time.Now()
	tg.Text(l.chat, l.user, 0, text, nil)
}

// filler is what the fake model adds to an echo for -reply-words: n words
// of a few letters each, so the model splits the reply into one delta per
// word.
func filler(n int) string {
	return strings.Repeat(" word", n)
}

// startGateway builds gatewayd and runs it against the fakes; its output
// goes to a file so that logging costs what it costs in production.
func startGateway(t *testing.T, tg *telegramtest.Server, model *codextest.Model, o options, dir string) *exec.Cmd {
	bin := buildGateway(t)
	users := make([]string, o.lanes)
	for i := range users {
		users[i] = strconv.Itoa(10_001 + i)
	}
	live := o.maxLive
	if live <= 0 {
		live = o.lanes + 10
	}
	lanesCfg := map[string]any{"max_live": live, "max_per_minute": 0} // the load is one sender per lane, far past any limit
	if o.concurrent > 0 {
		lanesCfg["max_concurrent_turns"] = o.concurrent
	}
	cfg := map[string]any{
		"state_dir": filepath.Join(dir, "state"),
		"log":       map[string]any{"level": o.logLevel, "format": "json"},
		"codex": map[string]any{
			"command": codextest.CodexBinary(t), "args": codextest.Args(model.URL), "home": codextest.Home(t),
			"cwd": filepath.Join(dir, "work"), "start_timeout": "60s",
		},
		"telegram": map[string]any{"token": telegramtest.Token, "api_url": tg.URL, "allowed_users": users},
		"lanes":    lanesCfg,
		// The API lane is on by default; a free port keeps runs side by side.
		"api": map[string]any{"listen": freeAddr(t)},
	}
	raw, err := json.Marshal(cfg) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "gatewayd.yaml")
	if err := os.WriteFile(cfgFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "gatewayd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfgFile)
	cmd.Dir = dir
	cmd.Env = append(append(cleanEnv(), codextest.Env()...), o.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := cmd.Start
	if *timerSlack > 0 {
		start = func() error { return timerslack.Start(cmd, *timerSlack) }
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
		if *keepLog != "" {
			if out, err := os.ReadFile(logFile.Name()); err == nil {
				_ = os.WriteFile(*keepLog, out, 0o600)
			}
		}
		if t.Failed() {
			out, _ := os.ReadFile(logFile.Name())
			t.Logf("gatewayd output (last 4 KB):\n%s", tail(out, 4096))
		}
	})
	return cmd
}

// buildGateway builds gatewayd once per test binary run, unless
// -gatewayd-bin names one.
func buildGateway(t *testing.T) string {
	if *daemonBin != "" {
		return *daemonBin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "loadgen-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "gatewayd")
		out, err := exec.Command("go", "build", "-o", builtBin, "github.com/gatewayd/gatewayd/cmd/gatewayd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// cleanEnv drops the operator's GATEWAYD_* and systemd variables, which
// would override the generated config.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := cutEq(kv)
		if len(name) >= 9 && name[:9] == "GATEWAYD_" || name == "NOTIFY_SOCKET" || name == "CODEX_HOME" ||
			name == "WATCHDOG_USEC" || name == "WATCHDOG_PID" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func cutEq(kv string) (string, string, bool) {
	for i := range len(kv) {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// measureIdleAfter reads gatewayd's CPU over d with nothing to do but
// every lane of the load still live: the background cost (timers, polling,
// leases) that the per-message figure includes for as long as a run lasts.
func (r *result) measureIdleAfter(t *testing.T, d time.Duration) {
	from, err := Measure(r.pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d) // a measurement window, not synchronisation
	to, err := Measure(r.pid)
	if err != nil {
		t.Fatal(err)
	}
	r.idleAfter, r.idleAfterFor = to.GatewayCPU-from.GatewayCPU, d
}

func (r *result) log(t *testing.T) {
	n := len(r.latencies)
	lat := slices.Clone(r.latencies)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(n-1, int(p*float64(n)))] }
	gw := r.after.GatewayCPU - r.before.GatewayCPU
	cx := r.after.ChildCPU - r.before.ChildCPU
	t.Logf("loadgen: lanes=%d messages=%d replies=%d wall=%v rate=%.1f msg/s",
		r.opts.lanes, r.opts.messages, n, r.wall.Round(time.Millisecond), float64(n)/r.wall.Seconds())
	t.Logf("loadgen: latency p50=%v p95=%v p99=%v max=%v", pct(0.50).Round(10*time.Microsecond),
		pct(0.95).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), lat[n-1].Round(10*time.Microsecond))
	sys := r.after.GatewaySys - r.before.GatewaySys
	sysmon := r.after.GatewaySysmon - r.before.GatewaySysmon
	t.Logf("loadgen: cpu gatewayd=%v (%.2f ms/msg, of it system %.2f ms/msg, the runtime's sysmon thread %.2f ms/msg) app-server=%v (%.2f ms/msg)",
		gw, ms(gw)/float64(n), ms(sys)/float64(n), ms(sysmon)/float64(n), cx, ms(cx)/float64(n))
	t.Logf("loadgen: cpu of the fakes and driver (this process)=%v (%.2f ms/msg)", r.self, ms(r.self)/float64(n))
	t.Logf("loadgen: bot api calls %s", strings.Join(r.calls, " "))
	t.Logf("loadgen: idle gatewayd cpu=%v per %v", r.idle, idleWindow)
	if r.idleAfterFor > 0 {
		// What the run would have cost had gatewayd burnt its idle rate
		// all along; the rest is the messages' own work.
		background := time.Duration(float64(r.idleAfter) * r.wall.Seconds() / r.idleAfterFor.Seconds())
		t.Logf("loadgen: idle gatewayd cpu with %d lanes live=%v per %v; cpu per message without that background=%.2f ms",
			r.opts.lanes, r.idleAfter, r.idleAfterFor, ms(gw-background)/float64(n))
	}
	t.Logf("loadgen: rss gatewayd=%.1f MB app-server tree=%.1f MB", mb(r.after.GatewayRSS), mb(r.after.ChildRSS))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mb(b int64) float64         { return float64(b) / (1 << 20) }
