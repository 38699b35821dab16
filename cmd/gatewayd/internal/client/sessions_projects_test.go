package client

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/webconsole"
)

// sessions show names the lane's project and the directory it works in,
// from the daemon (admin API) and from the store when the daemon is down.
func TestSessionsShowProject(t *testing.T) {
	dirs := webconsole.Workdirs{Projects: map[string]string{"site": "/srv/src/site"}, Fallback: "/var/lib/gatewayd/workspace"}
	tests := []struct {
		name, project string
		want          []string
	}{
		{"no project", "", []string{"project:          - (codex.cwd)", "directory:        /var/lib/gatewayd/workspace"}},
		{"a project", "site", []string{"project:          site\n", "directory:        /srv/src/site"}},
		{"a project no longer configured", "gone",
			[]string{"project:          gone (no longer configured: codex.cwd until chosen again)", "directory:        /var/lib/gatewayd/workspace"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := openTestStore(t)
			if err := st.SetProject(ctx, "v1:api:default", tc.project); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(webconsole.NewAdmin(offlineBackend{st}, "", dirs))
			defer srv.Close()
			client := &API{Base: srv.URL, HTTP: srv.Client()}
			ways := map[string]func(out *bytes.Buffer) error{
				"daemon": func(out *bytes.Buffer) error {
					return runSessions(ctx, client, "show", []string{"v1:api:default"}, 10, out)
				},
				"offline": func(out *bytes.Buffer) error {
					return runSessionsOffline(ctx, offlineBackend{st}, dirs, "show", []string{"v1:api:default"}, 10, out)
				},
			}
			for way, show := range ways {
				var out bytes.Buffer
				if err := show(&out); err != nil {
					t.Fatalf("%s: %v", way, err)
				}
				for _, want := range tc.want {
					if !strings.Contains(out.String(), want) {
						t.Errorf("%s: show lacks %q:\n%s", way, want, out.String())
					}
				}
			}
		})
	}
}
