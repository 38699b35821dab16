package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
)

// craftedLane is the lane name of a security report's: decoded, it is
// "v1:api:../admin/sessions/v1:api:B/reset?", which, put into a request
// path unencoded, turned "New thread" into a reset of lane B through the
// admin route.
const craftedLane = "v1:api:..%2Fadmin%2Fsessions%2Fv1:api:B%2Freset%3F"

// laneState is what a reset changes.
type laneState struct {
	ThreadID   string `json:"thread_id"`
	Binding    string `json:"binding"`
	Generation int64  `json:"generation"`
	Turns      int64  `json:"turns"`
}

// A crafted lane name in the URL reaches no other route: the page says it
// is not a lane and requests nothing for it, so clicking whatever the page
// offers (the command buttons and selects, when there are any) leaves lane
// B as it was and sends nothing to /api/admin/. A page on another origin
// cannot frame the console (no token is set, so a framed console would be
// usable).
func TestBrowserCraftedLaneNameReachesNoOtherRoute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon and a browser")
	}
	b := newBrowser(t)
	s := newDaemonSetup(t)
	s.configure(t, nil)
	api := s.api
	s.start(t, "console-crafted")

	if reply := postMessage(t, api, "B", "hello B"); reply != "ECHO: hello B" {
		t.Fatalf("lane B's first reply %q", reply)
	}
	before := laneStateOf(t, api, "v1:api:B")
	if before.ThreadID == "" {
		t.Fatalf("lane B has no thread after a turn: %+v", before)
	}

	b.run(t, "open /", chromedp.Navigate(api.Base+"/"), chromedp.WaitVisible(chromedp.CSS(`#lanes-body tr`)))
	mark := len(b.requestsSince(0))
	b.run(t, "open the crafted lane", chromedp.Navigate(api.Base+"/#/lane/"+craftedLane))
	b.waitJS(t, "the lane page or its refusal", `document.getElementById('lane-error') !== null || document.getElementById('cmd-new') !== null`)

	// Whatever the page offers is clicked, each answer awaited in the notes.
	for _, button := range []string{"#cmd-new", "#cmd-stop", "#cmd-retry", "#cmd-compact", "#cmd-reset"} {
		if evalJS[bool](t, b, `document.querySelector('`+button+`') !== null`) {
			b.command(t, button)
		}
	}
	if evalJS[bool](t, b, `document.getElementById('cmd-verbose') !== null`) {
		b.run(t, "choose verbose off", chromedp.Evaluate[chromedp.Void](`(() => {
			document.getElementById('lane-notes').textContent = '';
			const s = document.getElementById('cmd-verbose');
			s.value = 'off';
			s.dispatchEvent(new Event('change'));
		})()`))
		b.waitJS(t, "verbose answered", `document.getElementById('lane-notes').textContent !== ''`)
	}

	if got := evalJS[string](t, b, `document.getElementById('lane-error')?.textContent || ''`); !strings.Contains(got, "is not a lane name") {
		t.Errorf("the page shows %q, want it to say the name is not a lane name", got)
	}
	var toAPI []string
	for _, r := range b.requestsSince(mark) {
		method, raw, _ := strings.Cut(r, " ")
		u, err := url.Parse(raw)
		if err != nil {
			t.Errorf("request %q: %v", r, err)
			continue
		}
		if strings.HasPrefix(u.Path, "/api/admin/") {
			t.Errorf("the page sent %s %s to an admin route", method, u.RequestURI())
		}
		// The header's account state is read on every page; it names no lane.
		if strings.HasPrefix(u.Path, "/api/") && u.RequestURI() != "/api/account" {
			toAPI = append(toAPI, method+" "+u.RequestURI())
		}
	}
	if len(toAPI) > 0 {
		t.Errorf("for a name that is no lane's the page requested %q, want nothing", toAPI)
	}
	if after := laneStateOf(t, api, "v1:api:B"); after != before {
		t.Errorf("lane B after the crafted page: %+v, before %+v: it was reset", after, before)
	}

	// A page on another origin frames the console: the browser refuses
	// to show it (frame-ancestors 'none', X-Frame-Options DENY).
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>hostile</title><iframe id="f" src="%s/#/lane/B" onload="window.framed = true"></iframe>`, api.Base)
	}))
	t.Cleanup(hostile.Close)
	b.run(t, "open the hostile page", chromedp.Navigate(hostile.URL))
	b.waitJS(t, "the frame settles", `window.framed === true`)
	tree, err := chromedp.Call(b.ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.FrameTree.ChildFrames) != 1 {
		t.Fatalf("the hostile page has %d frames, want its one iframe", len(tree.FrameTree.ChildFrames))
	}
	// A refused frame is Chromium's error page, with the console's URL as
	// the one it could not show.
	if f := tree.FrameTree.ChildFrames[0].Frame; strings.HasPrefix(f.URL, api.Base) || !strings.HasPrefix(f.UnreachableURL, api.Base) {
		t.Errorf("the framed console loaded: frame URL %q (unreachable %q), want it refused", f.URL, f.UnreachableURL)
	}
	b.noExceptions(t)
}

func laneStateOf(t *testing.T, api *client.API, key string) laneState {
	t.Helper()
	var l laneState
	if err := api.Do(t.Context(), http.MethodGet, "/api/lanes/"+url.PathEscape(key), nil, &l); err != nil {
		t.Fatal(err)
	}
	return l
}
