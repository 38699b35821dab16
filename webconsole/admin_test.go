package webconsole_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/webconsole"
)

// openTestStore opens a real store with two lanes and one committed turn.
func openTestStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, k := range []store.LaneKey{
		{SessionKey: "v1:api:default", Platform: "api", Kind: "api", ChatID: "default"},
		{SessionKey: "v1:telegram:topic:-100:42", Platform: "telegram", Kind: "topic", ChatID: "-100", TopicID: "42"},
	} {
		if _, err := st.EnsureLane(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	lane, err := st.Lane(ctx, "v1:api:default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CommitTurn(ctx, store.CompletedTurn{
		SessionKey: lane.SessionKey, Generation: lane.Generation, SessionID: lane.SessionID,
		ThreadID: "thr-1", TurnID: "turn-1", UserText: "remember 42", AssistantText: "noted: 42",
		Status: "completed",
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

// storeBackend serves the admin routes from the store alone, as the
// sessions CLI's offline backend does.
type storeBackend struct{ st *store.Store }

func (b storeBackend) Lanes(ctx context.Context, limit int) ([]store.Lane, error) {
	return b.st.Lanes(ctx, limit)
}
func (b storeBackend) Lane(ctx context.Context, key string) (store.Lane, error) {
	return b.st.Lane(ctx, key)
}
func (b storeBackend) Transcript(ctx context.Context, key string, limit int) ([]store.Message, error) {
	return b.st.Transcript(ctx, key, limit)
}
func (b storeBackend) Search(ctx context.Context, query string, limit int) ([]store.Message, error) {
	return b.st.Search(ctx, query, limit)
}
func (b storeBackend) Reset(ctx context.Context, key string) error {
	_, err := b.st.ResetLane(ctx, key, "reset by operator")
	return err
}

func TestAdminHandlerAuthAndMethods(t *testing.T) {
	st := openTestStore(t)
	h := webconsole.NewAdmin(storeBackend{st}, "tok", webconsole.Workdirs{})
	tests := []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no token", "GET", "/api/admin/sessions", "", 401},
		{"wrong token", "GET", "/api/admin/sessions", "Bearer nope", 401},
		{"list", "GET", "/api/admin/sessions", "Bearer tok", 200},
		{"list POST", "POST", "/api/admin/sessions", "Bearer tok", 405},
		{"reset GET", "GET", "/api/admin/sessions/v1:api:default/reset", "Bearer tok", 405},
		{"reset missing", "POST", "/api/admin/sessions/v1:api:nope/reset", "Bearer tok", 404},
		{"reset", "POST", "/api/admin/sessions/v1:api:default/reset", "Bearer tok", 200},
		{"other route", "GET", "/api/admin/other", "Bearer tok", 404},
		{"slash in key", "GET", "/api/admin/sessions/a%2Fb", "Bearer tok", 400},
		{"search", "GET", "/api/admin/search?q=remember", "Bearer tok", 200},
		{"search without words", "GET", "/api/admin/search?q=+", "Bearer tok", 400},
		{"search POST", "POST", "/api/admin/search?q=x", "Bearer tok", 405},
		{"search no token", "GET", "/api/admin/search?q=x", "", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("%s %s = %d, want %d (%s)", tc.method, tc.path, rec.Code, tc.want, rec.Body.String())
			}
		})
	}
}
