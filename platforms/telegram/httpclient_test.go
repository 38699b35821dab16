package telegram

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHTTPClientReusesConnectionsInBursts: rounds of concurrent Bot API
// requests (typing indicators and replies to many chats) reuse the
// connections of the last round instead of dialling again; the default
// transport keeps only 2 per host, which would dial 6 of 8 anew each round.
func TestHTTPClientReusesConnectionsInBursts(t *testing.T) {
	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true,"result":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := newHTTPClient(10 * time.Second)
	const burst, rounds = 8, 5
	for range rounds {
		var wg sync.WaitGroup
		for range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Post(srv.URL+"/botTOKEN/sendChatAction", "application/json", nil)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		wg.Wait()
	}
	// A connection returns to the pool just after its caller read the
	// body, so a request of the next round can still miss one now and then.
	if got, most := dials.Load(), int64(burst+burst/2); got > most {
		t.Errorf("%d connections for %d rounds of %d concurrent requests, want at most %d", got, rounds, burst, most)
	}
}
