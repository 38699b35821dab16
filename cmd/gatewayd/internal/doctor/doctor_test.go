package doctor

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/config"
)

func TestCodexVersionParse(t *testing.T) {
	for in, want := range map[string]string{"codex-cli 0.169.0\n": "0.169.0", "": "", "0.170.1": "0.170.1"} {
		if got := CodexVersion(in); got != want {
			t.Errorf("CodexVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// A listener that answers /healthz as gatewayd does (ready or not) passes.
func TestDoctorListenHeldByGatewayd(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":"unavailable","reason":"Codex is not logged in"}`))
	}))
	defer srv.Close()
	var out strings.Builder
	d := &doctor{out: &out, http: srv.Client()}
	d.checkListen(t.Context(), strings.TrimPrefix(srv.URL, "http://"))
	if d.failed != 0 || !strings.Contains(out.String(), "held by a running gatewayd (/healthz 503 unavailable: Codex is not logged in)") {
		t.Errorf("failed %d:\n%s", d.failed, out.String())
	}
}

// doctor's access line: with a token, every client needs it; without, the
// uid it names is the one listening on api.listen (here this process's);
// an api.allow_group that does not exist is ✗, since the daemon would not
// start.
func TestDoctorAPIAccess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := &config.Config{StateDir: t.TempDir(), API: config.API{Listen: ln.Addr().String()}}
	for _, c := range []struct {
		name       string
		token      string
		group      string
		want       string
		wantFailed int
	}{
		{"token", "s3cret", "", "✓ local API: api.token set; every client needs it", 0},
		{"no token", "", "", fmt.Sprintf("✓ local API: only uid %d", os.Getuid()), 0},
		{"no such group", "", "no-such-group-gatewayd-test", `✗ api.allow_group "no-such-group-gatewayd-test"`, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			d := &doctor{out: &out}
			cfg.API.Token, cfg.API.AllowGroup = c.token, c.group
			d.checkAPIAccess(cfg)
			if !strings.HasPrefix(out.String(), c.want) || d.failed != c.wantFailed || strings.Contains(out.String(), "s3cret") {
				t.Errorf("got (failed %d):\n%s\nwant a line starting %q, failed %d, no token", d.failed, out.String(), c.want, c.wantFailed)
			}
			if c.name == "no token" && !strings.Contains(out.String(), "and root without a token (the running daemon's user)") {
				t.Errorf("the line does not say whose uid it is:\n%s", out.String())
			}
		})
	}
}
