package api

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/user"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// The rule: root and the daemon's own uid always; a member of
// api.allow_group when one is set (the user's groups read once per uid);
// an unknown user never; a failed lookup refuses and is tried again.
func TestPeerPolicyAllowGroup(t *testing.T) {
	lookups := map[uint32]int{}
	groups := map[uint32][]string{1001: {"1001", "900"}, 1002: {"1002"}}
	broken := true
	p := &peerPolicy{own: 500, group: "gw-users", gid: "900", member: map[uint32]bool{},
		groupsOf: func(uid uint32) ([]string, error) {
			lookups[uid]++
			if uid == 1003 && broken {
				return nil, errors.New("passwd unreadable")
			}
			if g, ok := groups[uid]; ok {
				return g, nil
			}
			return nil, user.UnknownUserIdError(int(uid))
		}}
	for _, c := range []struct {
		name string
		uid  uint32
		want bool
	}{
		{"root", 0, true},
		{"the daemon's user", 500, true},
		{"a member of the group", 1001, true},
		{"not a member", 1002, false},
		{"no user entry", 4242, false},
		{"the member again, from the cache", 1001, true},
	} {
		if got, err := p.allows(c.uid); got != c.want || err != nil {
			t.Errorf("%s (uid %d): %v, %v; want %v", c.name, c.uid, got, err, c.want)
		}
	}
	if lookups[1001] != 1 || lookups[0] != 0 || lookups[500] != 0 {
		t.Errorf("group lookups %v: want one for uid 1001, none for root and the daemon's user", lookups)
	}
	if ok, err := p.allows(1003); ok || err == nil {
		t.Errorf("a failed lookup: %v, %v; want refused with the error", ok, err)
	}
	broken = false
	groups[1003] = []string{"900"}
	if ok, err := p.allows(1003); !ok || err != nil {
		t.Errorf("after the lookup works again: %v, %v; want allowed", ok, err)
	}

	none := &peerPolicy{own: 500, member: map[uint32]bool{}, groupsOf: func(uint32) ([]string, error) {
		t.Error("groups read without api.allow_group")
		return nil, nil
	}}
	if ok, _ := none.allows(1001); ok {
		t.Error("without api.allow_group another user is let in")
	}
}

// api.allow_group is resolved at start from the system's groups: an
// unknown name is a configuration error, a real one lets its members in.
func TestPeerPolicyResolvesTheGroup(t *testing.T) {
	if _, err := newPeerPolicy("no-such-group-gatewayd-test"); !errors.Is(err, gateway.ErrConfig) ||
		!strings.Contains(err.Error(), "api.allow_group") {
		t.Errorf("unknown group: %v, want a config error naming api.allow_group", err)
	}
	g, err := user.LookupGroupId("65534")
	if err != nil {
		t.Skipf("no group 65534 here: %v", err)
	}
	if _, err := user.LookupId("65534"); err != nil {
		t.Skipf("no user 65534 here: %v", err)
	}
	p, err := newPeerPolicy(g.Name)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.allows(65534); !ok || err != nil {
		t.Errorf("uid 65534 in group %s: %v, %v; want allowed", g.Name, ok, err)
	}
}

// peerAPI runs the platform with its peer lookup replaced by who, and
// counts the lookups.
type peerAPI struct {
	p       *Platform
	logs    *observer.ObservedLogs
	mu      sync.Mutex
	uid     uint32
	err     error
	lookups int
}

func runPeerAPI(t *testing.T, cfg Config) *peerAPI {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	pa := &peerAPI{logs: logs}
	cfg.Logger = zap.New(core)
	cfg.Public = []string{"/healthz"}
	pa.p = runAPI(t, cfg, func(p *Platform, st *store.Store) testGateway {
		p.lookupUID = func(netip.AddrPort, netip.AddrPort) (uint32, error) {
			pa.mu.Lock()
			defer pa.mu.Unlock()
			pa.lookups++
			return pa.uid, pa.err
		}
		return newFakeSink(p, st, echo)
	})
	return pa
}

func (pa *peerAPI) be(uid uint32, err error) {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	pa.uid, pa.err = uid, err
}

func (pa *peerAPI) lookupCount() int {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	return pa.lookups
}

// call sends one request on a new connection (or on client's).
func (pa *peerAPI) call(t *testing.T, client *http.Client, method, path, token string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"text":"hi"}`)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+pa.p.Addr()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Without a token: another uid gets 401 everywhere but /healthz, with the
// listener's security headers and who would be let in; the daemon's user
// and root are served; an unknown peer is refused and logged at a bounded
// rate; the lookup runs once per connection.
func TestPeerGateWithoutToken(t *testing.T) {
	pa := runPeerAPI(t, Config{})
	pa.be(65534, nil)
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/api/lanes/demo/messages"}, {http.MethodGet, "/api/lanes/demo/approvals"},
		{http.MethodGet, "/api/lanes/demo/messages/x"}, {http.MethodGet, "/nowhere"},
	} {
		code, body := pa.call(t, nil, r.method, r.path, "")
		if code != http.StatusUnauthorized || !strings.Contains(body, "uid 65534") || !strings.Contains(body, "root") {
			t.Errorf("uid 65534 %s %s: %d %s, want 401 naming the uid and who is let in", r.method, r.path, code, body)
		}
	}
	if code, _ := pa.call(t, nil, http.MethodGet, "/healthz", ""); code != http.StatusOK {
		t.Errorf("uid 65534 GET /healthz: %d, want 200", code)
	}
	if n := len(pa.logs.FilterMessage("api.peer_refused").All()); n != 1 {
		t.Errorf("%d api.peer_refused lines for four refusals within a minute, want 1", n)
	}

	for _, uid := range []uint32{0, uint32(os.Getuid())} {
		pa.be(uid, nil)
		if code, body := pa.call(t, nil, http.MethodPost, "/api/lanes/demo/messages", ""); code != http.StatusOK || !strings.Contains(body, "re: hi") {
			t.Errorf("uid %d POST: %d %s, want 200 with the reply", uid, code, body)
		}
	}

	pa.be(0, errors.New("procnet: no local socket has the peer's address"))
	code, body := pa.call(t, nil, http.MethodGet, "/api/lanes/demo/approvals", "")
	if code != http.StatusUnauthorized || !strings.Contains(body, "could not tell which local user") {
		t.Errorf("unknown peer: %d %s, want 401 saying why", code, body)
	}
	pa.call(t, nil, http.MethodGet, "/api/lanes/demo/approvals", "")
	if logs := pa.logs.FilterMessage("api.peer_unknown").All(); len(logs) != 1 || !strings.Contains(logs[0].ContextMap()["reason"].(string), "no local socket") {
		t.Errorf("api.peer_unknown lines %v, want one with the reason", logs)
	}

	pa.be(uint32(os.Getuid()), nil)
	pa.mu.Lock()
	pa.lookups = 0
	pa.mu.Unlock()
	keepAlive := &http.Client{Transport: &http.Transport{}}
	for range 3 {
		pa.call(t, keepAlive, http.MethodGet, "/api/lanes/demo/approvals", "")
	}
	if n := pa.lookupCount(); n != 1 {
		t.Errorf("%d lookups for three requests on one connection, want 1", n)
	}
}

// With a token set, the token decides for every user: another uid with it
// is served, the daemon's own without it is not, and nobody is looked up.
func TestPeerGateWithToken(t *testing.T) {
	pa := runPeerAPI(t, Config{Token: "s3cret"})
	pa.be(65534, nil)
	if code, body := pa.call(t, nil, http.MethodPost, "/api/lanes/demo/messages", "s3cret"); code != http.StatusOK {
		t.Errorf("uid 65534 with the token: %d %s, want 200", code, body)
	}
	pa.be(uint32(os.Getuid()), nil)
	if code, _ := pa.call(t, nil, http.MethodPost, "/api/lanes/demo/messages", ""); code != http.StatusUnauthorized {
		t.Errorf("the daemon's user without the token: %d, want 401", code)
	}
	if n := pa.lookupCount(); n != 0 {
		t.Errorf("%d peer lookups with a token set, want none", n)
	}
}

// A connection that is not TCP has no peer to name: refused.
func TestPeerGateWithoutTCPAddresses(t *testing.T) {
	p := New(Config{Public: []string{"/healthz"}})
	p.policy = &peerPolicy{own: uint32(os.Getuid()), member: map[uint32]bool{}}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx := p.connContext(t.Context(), a)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/api/lanes/demo/approvals", nil)
	w := &recorder{header: http.Header{}}
	p.checkPeer(http.NotFoundHandler()).ServeHTTP(w, req)
	if w.code != http.StatusUnauthorized {
		t.Errorf("a pipe: %d, want 401", w.code)
	}
}

type recorder struct {
	header http.Header
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.code = code }

func TestRateLog(t *testing.T) {
	l := rateLog{every: time.Minute}
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for i, c := range []struct {
		at        time.Duration
		log       bool
		suppresed int
	}{{0, true, 0}, {time.Second, false, 0}, {59 * time.Second, false, 0}, {61 * time.Second, true, 2}, {62 * time.Second, false, 0}} {
		if n, log := l.take(t0.Add(c.at)); log != c.log || n != c.suppresed {
			t.Errorf("take %d at +%v = %d, %v; want %d, %v", i, c.at, n, log, c.suppresed, c.log)
		}
	}
}
