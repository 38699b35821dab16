package main

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// The upload spool, as a process: <state_dir>/spool is emptied
// of a killed daemon's leftovers at start (spool.cleaned counts them) and
// made 0700, and an API upload is spooled there, never under TMPDIR, and
// gone once the message is taken.
func TestProcessUploadSpoolUnderStateDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	codexBin := codextest.CodexBinary(t)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	home := codextest.Home(t)
	dir := t.TempDir()
	state, tmp := filepath.Join(dir, "state"), filepath.Join(dir, "tmp")
	spool := filepath.Join(state, "spool")
	for _, d := range []string{filepath.Join(spool, "nested"), tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, data := range map[string]string{filepath.Join(spool, "gatewayd-upload-1"): "12345",
		filepath.Join(spool, "nested", "x"): "678"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	cfgFile := writeProcessConfig(t, dir, map[string]any{
		"state_dir": state,
		"log":       map[string]any{"level": "info", "format": "json"},
		"codex": map[string]any{
			"command": codexBin, "args": codextest.Args(model.URL), "home": home,
			"cwd": filepath.Join(dir, "work"), "sandbox": "danger-full-access", "start_timeout": "60s",
		},
		"api": map[string]any{"listen": addr, "token": "test-token"},
	})
	watchTmp, watchSpool := watchCreates(t, tmp), watchCreates(t, spool)
	d := startDaemonWith(t, bin, cfgFile, dir, "spool", listenNotify(t).path, func(c *exec.Cmd) error {
		c.Env = append(c.Env, "TMPDIR="+tmp)
		return c.Start()
	})
	api := &client.API{Base: "http://" + addr, Token: "test-token", HTTP: &http.Client{Timeout: 2 * time.Minute}}
	waitHealthy(t, api, d)

	cleaned := logEvents(d, "spool.cleaned", nil)
	if len(cleaned) != 1 || cleaned[0]["dir"] != spool || cleaned[0]["files"] != 2.0 || cleaned[0]["bytes"] != 8.0 {
		t.Errorf("spool.cleaned events = %v, want one for %s with 2 files, 8 bytes", cleaned, spool)
	}
	if left := dirNames(t, spool); len(left) != 0 {
		t.Errorf("the spool holds %q after the start, want the leftovers removed", left)
	}
	if info, err := os.Stat(spool); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("spool mode = %v, %v; want 0700", info.Mode().Perm(), err)
	}

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("text", "what is in the file?")
	fw, _ := mw.CreateFormFile("file", "notes.txt")
	_, _ = io.WriteString(fw, "spooled bytes")
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, api.Base+"/api/lanes/spool/messages", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer test-token")
	resp, err := api.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload answered %d %s, want 200", resp.StatusCode, answer)
	}
	if got := uploads(watchSpool()); len(got) != 1 {
		t.Errorf("files created in %s: %q, want the upload's spool file", spool, got)
	}
	if got := uploads(watchTmp()); len(got) != 0 {
		t.Errorf("upload files created under TMPDIR: %q, want none", got)
	}
	if left := dirNames(t, spool); len(left) != 0 {
		t.Errorf("the spool holds %q after the answer, want nothing", left)
	}
}

// uploads keeps the API platform's spool file names.
func uploads(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "gatewayd-upload-") {
			out = append(out, n)
		}
	}
	return out
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// watchCreates watches dir with inotify and returns a function that lists
// the names created in it since (the kernel queues the events, so a file
// created and removed before the call is still named).
func watchCreates(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE|syscall.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	var names []string
	return func() []string {
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if err == syscall.EAGAIN {
				return names
			}
			if err != nil {
				t.Fatal(err)
			}
			if n <= 0 {
				return names
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
				names = append(names, strings.TrimRight(string(name), "\x00"))
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}
