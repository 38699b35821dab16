package api

import (
	"net"
	"net/http"
	"strings"

	"go.uber.org/zap"
)

// The API drives Codex, so a web page the operator happens to open must not
// be able to use it. Two browser attacks reach a loopback listener:
//
//   - DNS rebinding: a page on evil.example points its own name at
//     127.0.0.1, and its requests arrive with "Host: evil.example". Only
//     our own names are answered (hostAllowed).
//   - Cross-site requests: a page POSTs to http://127.0.0.1:8787 directly.
//     The browser labels such a request with Origin (and Sec-Fetch-Site);
//     /api/ refuses every origin that is not allowed (originAllowed), and
//     JSON routes refuse the form and text/plain bodies a page may send
//     without asking first (acceptBody, in body.go).
//
// Clients that are not browsers (curl, gatewayd chat) send neither header
// and are not affected.

// loopbackNames are answered on every listener: a client on this machine
// (or through an SSH tunnel) uses one of them.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// guard checks the Host and Origin of every request before any route runs.
type guard struct {
	log *zap.Logger
	// names are host names answered on any port; hostPorts are
	// "name:port" entries answered on that port only. Both lower case.
	names     map[string]bool
	hostPorts map[string]bool
	origins   map[string]bool // allowed browser origins, lower case
}

// newGuard allows the loopback names, the listen host (unless it is a
// wildcard such as 0.0.0.0, which names no host) and the configured hosts
// and origins.
func newGuard(listen string, hosts, origins []string, log *zap.Logger) *guard {
	g := &guard{log: log, names: map[string]bool{}, hostPorts: map[string]bool{}, origins: map[string]bool{}}
	for _, n := range loopbackNames {
		g.names[n] = true
	}
	if host, _, err := net.SplitHostPort(listen); err == nil && !isWildcard(host) {
		g.names[strings.ToLower(host)] = true
	}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, _, err := net.SplitHostPort(h); err == nil {
			g.hostPorts[h] = true
		} else {
			g.names[hostName(h)] = true
		}
	}
	for _, o := range origins {
		g.origins[normalOrigin(o)] = true
	}
	return g
}

func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// wrap runs next only for requests that pass the checks; the others get a
// 403 naming the setting that would let them through.
func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetSecurityHeaders(w.Header())
		if !g.hostAllowed(r) {
			g.log.Warn("api.host_refused", zap.String("host", r.Host), zap.String("path", r.URL.Path))
			writeError(w, http.StatusForbidden, "Host "+r.Host+" is not served here (add it to api.allowed_hosts)")
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") && !g.originAllowed(r) {
			g.log.Warn("api.origin_refused", zap.String("origin", r.Header.Get("Origin")),
				zap.String("sec_fetch_site", r.Header.Get("Sec-Fetch-Site")), zap.String("path", r.URL.Path))
			writeError(w, http.StatusForbidden, "cross-origin requests are refused (add the origin to api.allowed_origins)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header names this server: a
// loopback name, the listen host, an allowed host, or the IP address the
// connection arrived on (a rebinding page always uses a DNS name, never
// our address literally). An empty Host (HTTP/1.0) comes from no browser.
func (g *guard) hostAllowed(r *http.Request) bool {
	host := strings.ToLower(r.Host)
	if host == "" || g.hostPorts[host] {
		return true
	}
	name := hostName(host)
	if g.names[name] {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && local.IP.String() == name
}

// hostName strips the port and the IPv6 brackets from a Host value.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// originAllowed reports whether a request may be a browser's cross-origin
// one we accept. Without Origin, only Sec-Fetch-Site can tell a browser's
// cross-site request (e.g. an image or form navigation) apart; "none" is
// the user typing the URL. With Origin, the origin must be allowed or be
// this very server (a page it serves itself: http://<the Host>).
func (g *guard) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		switch r.Header.Get("Sec-Fetch-Site") {
		case "", "same-origin", "none":
			return true
		}
		return false
	}
	o := normalOrigin(origin)
	return g.origins[o] || o == "http://"+strings.ToLower(r.Host)
}

func normalOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

// SetSecurityHeaders is set on every response of the listener, refusals
// included, before any route runs: no response may be framed by another
// page (a framed console could be steered into clicks), none is a
// document that loads anything, and none is sniffed into another type.
// The console's page replaces the CSP with one that loads its own files
// (webconsole), keeping frame-ancestors 'none'.
func SetSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
}
