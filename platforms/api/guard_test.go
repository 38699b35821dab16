package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/store"
)

// startGuarded runs the platform with the given allowed hosts and origins
// and the echo sink.
func startGuarded(t *testing.T, hosts, origins []string) (*Platform, *fakeSink) {
	t.Helper()
	var sink *fakeSink
	p := runAPI(t, Config{AllowedHosts: hosts, AllowedOrigins: origins}, func(p *Platform, st *store.Store) testGateway {
		sink = newFakeSink(p, st, echo)
		return sink
	})
	return p, sink
}

// received is how many messages reached the sink: a refused request must
// not run a turn.
func (s *fakeSink) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// send does one request to the platform; hdr are header name/value pairs,
// "Host" sets the Host header.
func send(t *testing.T, p *Platform, method, path, body string, hdr ...string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.Addr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

// The classic CSRF: a page on another site POSTs text/plain (no preflight)
// to the loopback API. It is refused and no turn runs.
func TestCrossSiteTextPostRunsNoTurn(t *testing.T) {
	t.Parallel()
	p, sink := startGuarded(t, nil, nil)
	tests := []struct {
		name string
		hdr  []string
		want int
	}{
		{"text/plain from evil.example", []string{"Content-Type", "text/plain", "Origin", "http://evil.example"}, 403},
		{"form from evil.example", []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "http://evil.example",
			"Sec-Fetch-Site", "cross-site"}, 403},
		{"JSON from evil.example", []string{"Content-Type", "application/json", "Origin", "http://evil.example"}, 403},
		{"text/plain without origin", []string{"Content-Type", "text/plain"}, 415},
		{"cross-site without origin", []string{"Content-Type", "application/json", "Sec-Fetch-Site", "cross-site"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := send(t, p, "POST", "/api/lanes/demo/messages", `{"text":"rm -rf ~"}`, tt.hdr...)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.want, body)
			}
			if msg, _ := body["error"].(string); msg == "" {
				t.Errorf("refusal without a JSON error message: %v", body)
			}
		})
	}
	if n := sink.received(); n != 0 {
		t.Errorf("%d refused messages reached the gateway", n)
	}
	// The same message from curl or gatewayd chat still runs.
	resp, body := send(t, p, "POST", "/api/lanes/demo/messages", `{"text":"hi"}`, "Content-Type", "application/json")
	if resp.StatusCode != 200 || body["reply"] != "re: hi" {
		t.Errorf("plain JSON POST: %d %v", resp.StatusCode, body)
	}
}

func TestHostHeaderCheck(t *testing.T) {
	t.Parallel()
	p, sink := startGuarded(t, []string{"GW.example", "gw.lan:8787"}, nil)
	_, port, _ := net.SplitHostPort(p.Addr())
	tests := []struct {
		name, host, path string
		want             int
	}{
		{"rebinding name", "evil.example:8787", "/api/lanes/demo/messages", 403},
		{"rebinding name without port", "evil.example", "/api/lanes/demo/messages", 403},
		{"rebinding name on healthz", "evil.example:" + port, "/healthz", 403},
		{"listen address", p.Addr(), "/api/lanes/demo/messages", 200},
		{"localhost", "localhost:" + port, "/api/lanes/demo/messages", 200},
		{"localhost upper case", "LocalHost:" + port, "/api/lanes/demo/messages", 200},
		{"localhost through a tunnel port", "localhost:9000", "/healthz", 200},
		{"ipv6 loopback", "[::1]:" + port, "/api/lanes/demo/messages", 200},
		{"allowed name, any port", "gw.EXAMPLE:443", "/api/lanes/demo/messages", 200},
		{"allowed host:port", "gw.lan:8787", "/api/lanes/demo/messages", 200},
		{"allowed host, other port", "gw.lan:9000", "/api/lanes/demo/messages", 403},
		{"suffix of an allowed name", "evilgw.example", "/healthz", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := send(t, p, "POST", tt.path, `{"text":"hi"}`, "Host", tt.host, "Content-Type", "application/json")
			if resp.StatusCode != tt.want {
				t.Fatalf("Host %q: status %d, want %d (%v)", tt.host, resp.StatusCode, tt.want, body)
			}
			if tt.want == 403 && !strings.Contains(body["error"].(string), "api.allowed_hosts") {
				t.Errorf("refusal %q does not name api.allowed_hosts", body["error"])
			}
		})
	}
	if n := sink.received(); n != 6 {
		t.Errorf("%d messages reached the gateway, want the 6 posted with an allowed Host", n)
	}
}

// A listener on every interface answers its own IP addresses (a rebinding
// page always arrives under a DNS name), the loopback names and the
// allowed hosts; not the wildcard address as a name.
func TestHostCheckOnWildcardListen(t *testing.T) {
	t.Parallel()
	g := newGuard("0.0.0.0:8787", []string{"gw.example"}, nil, nil)
	local := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8787}
	tests := []struct {
		host string
		want bool
	}{
		{"192.0.2.7:8787", true},
		{"gw.example:8787", true},
		{"localhost:8787", true},
		{"0.0.0.0:8787", false},
		{"192.0.2.8:8787", false},
		{"evil.example:8787", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "http://"+tt.host+"/healthz", nil)
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
			if got := g.hostAllowed(r); got != tt.want {
				t.Errorf("hostAllowed(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

func TestOriginCheck(t *testing.T) {
	t.Parallel()
	p, _ := startGuarded(t, nil, []string{"https://Console.example"})
	tests := []struct {
		name, path string
		hdr        []string
		want       int
	}{
		{"no origin (curl)", "/api/lanes/demo/messages", nil, 200},
		{"allowed origin", "/api/lanes/demo/messages", []string{"Origin", "https://console.example", "Sec-Fetch-Site", "cross-site"}, 200},
		{"same origin", "/api/lanes/demo/messages", []string{"Origin", "http://" + p.Addr(), "Sec-Fetch-Site", "same-origin"}, 200},
		{"typed into the address bar", "/api/lanes/demo/messages", []string{"Sec-Fetch-Site", "none"}, 200},
		{"other origin", "/api/lanes/demo/messages", []string{"Origin", "https://evil.example"}, 403},
		{"allowed host over https is another origin", "/api/lanes/demo/messages", []string{"Origin", "https://" + p.Addr()}, 403},
		{"null origin", "/api/lanes/demo/messages", []string{"Origin", "null"}, 403},
		{"same-site page on another port", "/api/lanes/demo/messages", []string{"Sec-Fetch-Site", "same-site"}, 403},
		{"cross-site read of approvals", "/api/lanes/demo/approvals", []string{"Origin", "https://evil.example"}, 403},
		{"cross-site read of questions", "/api/lanes/demo/questions", []string{"Origin", "https://evil.example"}, 403},
		{"health is not under /api/", "/healthz", []string{"Origin", "https://evil.example"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if tt.path != "/api/lanes/demo/messages" {
				method = "GET"
			}
			hdr := append([]string{"Content-Type", "application/json"}, tt.hdr...)
			resp, body := send(t, p, method, tt.path, `{"text":"hi"}`, hdr...)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.want, body)
			}
			if tt.want == 403 && !strings.Contains(body["error"].(string), "api.allowed_origins") {
				t.Errorf("refusal %q does not name api.allowed_origins", body["error"])
			}
		})
	}
}

// Every response of the listener, answers and refusals alike, forbids
// framing, loading anything and type sniffing (a framed console
// could be steered into clicks).
func TestEveryResponseCarriesTheSecurityHeaders(t *testing.T) {
	p, _ := startAPI(t, "tok", echo)
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		code                     int
	}{
		{"a reply", "POST", "/api/lanes/demo/messages", `{"text":"hi"}`,
			[]string{"Authorization", "Bearer tok", "Content-Type", "application/json"}, http.StatusOK},
		{"an extra handler", "GET", "/healthz", "", nil, http.StatusOK},
		{"no token", "POST", "/api/lanes/demo/messages", `{"text":"hi"}`, []string{"Content-Type", "application/json"}, http.StatusUnauthorized},
		{"a foreign Host", "GET", "/healthz", "", []string{"Host", "evil.example"}, http.StatusForbidden},
		{"a foreign Origin", "GET", "/api/lanes/demo/approvals", "", []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"no route", "GET", "/nowhere", "", nil, http.StatusNotFound},
		{"a bad lane", "GET", "/api/lanes/a%2Fb/messages/m1", "", []string{"Authorization", "Bearer tok"}, http.StatusBadRequest},
	}
	for _, tc := range cases {
		resp, _ := send(t, p, tc.method, tc.path, tc.body, tc.hdr...)
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %s %s = %d, want %d", tc.name, tc.method, tc.path, resp.StatusCode, tc.code)
		}
		for name, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
			"X-Frame-Options":         "DENY",
			"X-Content-Type-Options":  "nosniff",
		} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("%s: %s = %q, want %q", tc.name, name, got, want)
			}
		}
	}
}

// RequireToken is the API's bearer check for an extra handler (/metrics).
func TestRequireToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("served")) })
	p := runAPI(t, Config{Token: "tok", Handlers: map[string]http.Handler{"/guarded": RequireToken("tok", ok), "/open": RequireToken("", ok)}},
		func(p *Platform, st *store.Store) testGateway { return newFakeSink(p, st, echo) })
	for _, tc := range []struct {
		path string
		hdr  []string
		code int
	}{
		{"/guarded", nil, http.StatusUnauthorized},
		{"/guarded", []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"/guarded", []string{"Authorization", "Bearer tok"}, http.StatusOK},
		{"/open", nil, http.StatusOK},
	} {
		resp, _ := send(t, p, "GET", tc.path, "", tc.hdr...)
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s %v = %d, want %d", tc.path, tc.hdr, resp.StatusCode, tc.code)
		}
		if tc.code == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s %v: 401 without WWW-Authenticate", tc.path, tc.hdr)
		}
	}
}
