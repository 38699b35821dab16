package webconsole_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/webconsole"
)

// handler is the console mounted as the daemon mounts it: among the API
// platform's routes, behind its Host and Origin guard.
func handler(t *testing.T) http.Handler {
	t.Helper()
	routes := webconsole.Routes()
	routes["/healthz"] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"status":"ok"}`)
	})
	return api.New(api.Config{Listen: "127.0.0.1:8787", Handlers: routes}).Handler()
}

func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:8787"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func assertSecurityHeaders(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	for name, want := range map[string]string{
		"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := w.Header().Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestIndexIsServedAtTheRootWithTheSecurityHeaders(t *testing.T) {
	w := get(t, handler(t), http.MethodGet, "/")
	if w.Code != http.StatusOK {
		t.Fatalf("GET / = %d %s", w.Code, w.Body)
	}
	assertSecurityHeaders(t, w)
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	body := w.Body.String()
	if !strings.Contains(body, `<script type="module" src="/console/app.js">`) {
		t.Errorf("index.html does not load the app module:\n%s", body)
	}
	// CSP forbids inline code; the page must not rely on any.
	if strings.Contains(body, "<script>") || strings.Contains(body, "<style") || strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
		t.Errorf("index.html has inline script or style:\n%s", body)
	}
}

func TestAssetsHaveTheirTypeAndTheSecurityHeaders(t *testing.T) {
	h := handler(t)
	for path, want := range map[string]string{
		"/console/app.js":      "text/javascript; charset=utf-8",
		"/console/api.js":      "text/javascript; charset=utf-8",
		"/console/sse.js":      "text/javascript; charset=utf-8",
		"/console/markdown.js": "text/javascript; charset=utf-8",
		"/console/style.css":   "text/css; charset=utf-8",
	} {
		w := get(t, h, http.MethodGet, path)
		if w.Code != http.StatusOK {
			t.Errorf("GET %s = %d", path, w.Code)
			continue
		}
		if ct := w.Header().Get("Content-Type"); ct != want {
			t.Errorf("GET %s: Content-Type = %q, want %q", path, ct, want)
		}
		assertSecurityHeaders(t, w)
		if w.Body.Len() == 0 {
			t.Errorf("GET %s: empty body", path)
		}
	}
}

func TestUnknownAssetsAreNotFound(t *testing.T) {
	h := handler(t)
	for _, path := range []string{"/console/nope.js", "/console/", "/console/assets/app.js", "/favicon.ico", "/index.html"} {
		if w := get(t, h, http.MethodGet, path); w.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, w.Code)
		}
	}
	if w := get(t, h, http.MethodPost, "/"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", w.Code)
	}
}

// The page at "/" must not swallow the routes beside it: they keep their
// own answers, including the mux's 404 and 405.
func TestExistingRoutesAreUnaffected(t *testing.T) {
	h := handler(t)
	if w := get(t, h, http.MethodGet, "/healthz"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"ok"`) {
		t.Errorf("GET /healthz = %d %s", w.Code, w.Body)
	}
	if w := get(t, h, http.MethodGet, "/api/lanes/demo/messages"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET .../messages = %d, want 405 as before", w.Code)
	}
	if w := get(t, h, http.MethodGet, "/api/nothing"); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "<html") {
		t.Errorf("GET /api/nothing = %d %q, want a 404 that is not the page", w.Code, w.Body)
	}
}

// The page loads its own files and no page may frame it; every other
// answer of the listener (a JSON route, a refusal, the mux's 404) loads
// nothing and cannot be framed either.
func TestNothingServedCanBeFramed(t *testing.T) {
	h := handler(t)
	for _, path := range []string{"/healthz", "/api/nothing", "/console/nope.js", "/api/lanes/demo/messages"} {
		w := get(t, h, http.MethodGet, path)
		for name, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
			"X-Frame-Options":         "DENY",
			"X-Content-Type-Options":  "nosniff",
		} {
			if got := w.Header().Get(name); got != want {
				t.Errorf("GET %s (%d): %s = %q, want %q", path, w.Code, name, got, want)
			}
		}
	}
	assertSecurityHeaders(t, get(t, h, http.MethodGet, "/"))
}

func TestTheHostGuardAppliesToThePage(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = "evil.example"
	w := httptest.NewRecorder()
	handler(t).ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Fatalf("GET / with Host evil.example = %d, want 403", w.Code)
	}
	if strings.Contains(w.Body.String(), "<html") {
		t.Error("the refused request got the page")
	}
}

// Model text must only ever become DOM text; the scripts have no HTML
// sinks at all, so no later edit can route a reply into one by accident.
func TestScriptsHaveNoHTMLSinks(t *testing.T) {
	h := handler(t)
	for _, path := range []string{"/console/app.js", "/console/api.js", "/console/sse.js", "/console/markdown.js"} {
		body := get(t, h, http.MethodGet, path).Body.String()
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(body, sink) {
				t.Errorf("%s uses %s", path, sink)
			}
		}
	}
}
