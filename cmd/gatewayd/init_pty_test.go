package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// initTerminal is `gatewayd init` running in a pseudo-terminal: what it
// printed so far, and where the last expectation matched.
type initTerminal struct {
	t    *testing.T
	tty  *os.File
	mu   sync.Mutex
	buf  bytes.Buffer
	seen int
	done chan struct{}
	// printed wakes await each time the terminal shows more.
	printed poll.Broadcast
}

func (p *initTerminal) read() {
	defer close(p.done)
	b := make([]byte, 4096)
	for {
		n, err := p.tty.Read(b)
		p.mu.Lock()
		p.buf.Write(b[:n])
		p.mu.Unlock()
		p.printed.Notify()
		if err != nil {
			return
		}
	}
}

func (p *initTerminal) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// expect waits until want appears after the previous match.
func (p *initTerminal) expect(want string) {
	p.t.Helper()
	p.await(fmt.Sprintf("%q", want), func(rest string) (int, bool) {
		i := strings.Index(rest, want)
		return i + len(want), i >= 0
	})
}

// word returns the word printed right after the last match, once a
// space or line end follows it.
func (p *initTerminal) word() string {
	p.t.Helper()
	start := p.seen
	p.await("word", func(rest string) (int, bool) {
		i := strings.IndexAny(rest, " \r\n")
		return i, i > 0
	})
	return p.output()[start:p.seen]
}

// await reads the terminal's output past the previous match, again each
// time more is printed, until found says where the match ends; at most 30s.
func (p *initTerminal) await(what string, found func(rest string) (end int, ok bool)) {
	p.t.Helper()
	var out string
	if !poll.Wait(30*time.Second, p.printed.Wait, func() bool {
		out = p.output()
		end, ok := found(out[p.seen:])
		if ok {
			p.seen += end
		}
		return ok
	}) {
		p.t.Fatalf("no %s in the terminal after 30s; it shows:\n%s", what, out)
	}
}

func (p *initTerminal) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.tty, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// startInitTerminal starts cmd (a gatewayd init) on a terminal of its own
// and reads what it prints; the process is killed at the test's end if it
// is still running.
func startInitTerminal(t *testing.T, cmd *exec.Cmd) *initTerminal {
	t.Helper()
	cmd.Env = os.Environ()
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	p := &initTerminal{t: t, tty: tty, done: make(chan struct{})}
	go p.read()
	return p
}

func TestInitInteractiveTerminal(t *testing.T) {
	bin := buildDaemon(t)
	dir := initEnv(t)
	initFakeCodex(t, dir, false)
	tg := telegramtest.New(t)
	// Waiting from before init ran: never taken for the operator.
	tg.Text(models.Chat{ID: 999, Type: models.ChatTypePrivate}, models.User{ID: 999, FirstName: "Early"}, 0, "hi", nil)
	cfg := filepath.Join(dir, "conf", "gatewayd.yaml")

	cmd := exec.Command(bin, "init", "--config", cfg, "--telegram-api-url", tg.URL)
	p := startInitTerminal(t, cmd)

	const tokenPrompt = "Telegram bot token (from @BotFather; empty to skip Telegram): "
	p.expect(tokenPrompt)
	p.send("123456:BAD-token")
	p.expect("telegram rejected the bot token")
	p.expect(tokenPrompt)
	p.send(telegramtest.Token)
	p.expect("Telegram: token accepted (@gatewayd_test_bot)")
	p.expect("Discord bot token (Developer Portal, Bot, Reset Token; empty to skip Discord): ")
	p.send("")
	p.expect("Slack bot token (xoxb-…, the app's OAuth & Permissions page; empty to skip Slack): ")
	p.send("")
	p.expect("Matrix homeserver URL (e.g. https://matrix.example.org; empty to skip Matrix): ")
	p.send("")
	p.expect("Learn your Telegram user id from a code you send to @gatewayd_test_bot? [Y/n] ")
	p.send("")
	p.expect("Send this message to @gatewayd_test_bot now")
	p.expect("/start ")
	code := p.word()
	alice := models.User{ID: 4242, FirstName: "Alice"}
	tg.Text(models.Chat{ID: 4242, Type: models.ChatTypePrivate}, alice, 0, "/start "+code, nil)
	p.expect("Allow 4242 (Alice)? [y/N] ")
	p.send("y")
	p.expect("Project (name=/absolute/dir; empty when done): ")
	p.send("")
	p.expect("Codex: not logged in")
	p.expect("codex login --device-auth")
	p.expect("Config valid.")
	p.expect("✓ telegram token accepted (@gatewayd_test_bot)")

	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("init exited %d; the terminal shows:\n%s", ee.ExitCode(), p.output())
		} else if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("init did not exit; the terminal shows:\n%s", p.output())
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	out := p.output()
	t.Logf("terminal:\n%s", out)
	if strings.Contains(out, "TEST-token") || strings.Contains(out, "BAD-token") {
		t.Errorf("a token was shown on the terminal (echo not off?):\n%s", out)
	}
	yaml := initReadFile(t, cfg)
	if !strings.Contains(yaml, "telegram:\n  api_url: \""+tg.URL+"\"\n  allowed_users: [\"4242\"]\n") ||
		strings.Contains(yaml, "projects") || strings.Contains(yaml, "discord") || strings.Contains(yaml, "token-for") {
		t.Errorf("config:\n%s", yaml)
	}
	envFile := filepath.Join(dir, "conf", "env")
	if env := initReadFile(t, envFile); !strings.Contains(env, "\nGATEWAYD_TELEGRAM_TOKEN="+telegramtest.Token+"\n") {
		t.Errorf("env file:\n%s", env)
	}
	if m := initFileMode(t, envFile); m != 0o600 {
		t.Errorf("env mode %04o", m)
	}
	if m := initFileMode(t, cfg); m != 0o640 {
		t.Errorf("config mode %04o", m)
	}
	if n := tg.Pending(); n != 0 {
		t.Errorf("%d updates left unconfirmed: the daemon would answer them", n)
	}
}
