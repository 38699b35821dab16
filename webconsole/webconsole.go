// Package webconsole serves the browser console: a few static files
// embedded in the binary, so the page needs no build step and fetches
// nothing at run time. The page talks to the JSON routes of the API
// listener it is served from (same origin, so it passes the Host and
// Origin guard of platforms/api).
//
// Those JSON routes live here too: the console's lanes, transcripts and
// search (console.go), its status, models and projects (status.go), and the
// operator routes under /api/admin/ that `gatewayd sessions` uses
// (admin.go). Each handler names the small interface it reads; the daemon
// wires the store, the gateway and codex into them.
package webconsole

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/platforms/api"
)

//go:embed assets
var assets embed.FS

// contentTypes are set explicitly rather than guessed from the system's
// mime tables, which differ between machines (a module script served as
// anything but JavaScript is refused by the browser under nosniff).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Routes returns the console's patterns for api.Config.Handlers: the page
// at "/" exactly and its files under /console/. Neither overlaps /api/,
// /healthz or /metrics, so those keep their own 404s and 405s.
func Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /{$}":      http.HandlerFunc(serveIndex),
		"GET /console/": http.HandlerFunc(serveAsset),
	}
}

func serveIndex(w http.ResponseWriter, r *http.Request) {
	serveFile(w, r, "index.html")
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/console/")
	// Only flat names: the embedded tree has no directories to walk into.
	if name == "" || strings.Contains(name, "/") || name == "index.html" {
		http.NotFound(w, r)
		return
	}
	serveFile(w, r, name)
}

func serveFile(w http.ResponseWriter, r *http.Request, name string) {
	ctype, known := contentTypes[path.Ext(name)]
	data, err := fs.ReadFile(assets, "assets/"+name)
	if !known || err != nil {
		http.NotFound(w, r) // under the listener's CSP: it loads nothing
		return
	}
	setSecurityHeaders(w.Header())
	w.Header().Set("Content-Type", ctype)
	// The files change with the binary; no-cache makes the browser
	// revalidate instead of running a stale app.js after an upgrade.
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// pageCSP lets the page load its own files and nothing else: no inline
// script or style and no other origin (model text can never become code),
// and no page may frame it (a framed console could be steered into
// clicks). The page has no inline script or style to allow.
const pageCSP = "default-src 'self'; frame-ancestors 'none'"

// setSecurityHeaders replaces the API listener's CSP (which lets a
// response load nothing) with pageCSP, forbids framing and type sniffing,
// and keeps the console's URL from the links a reply contains.
func setSecurityHeaders(h http.Header) {
	api.SetSecurityHeaders(h)
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Referrer-Policy", "no-referrer")
}
