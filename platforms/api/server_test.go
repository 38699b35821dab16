package api

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// safety bounds a raw read so a broken server fails the test instead of
// hanging it; the tests wait for the server's own signal (EOF, a line).
const safety = 10 * time.Second

// dial opens a raw connection to the platform.
func dial(t *testing.T, p *Platform) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// getHealth sends a keep-alive GET /healthz on c and reads its answer.
func getHealth(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(safety))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /healthz: %s", resp.Status)
	}
}

// readToEOF reads until the server closes c; it fails on the safety
// deadline, which means the server kept the connection open.
func readToEOF(t *testing.T, c net.Conn, r io.Reader) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(safety))
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("connection not closed by the server: %v (read %q)", err, got)
	}
	return string(got)
}

func TestIdleKeepAliveConnectionIsClosed(t *testing.T) {
	t.Parallel()
	p := runAPI(t, Config{IdleTimeout: 50 * time.Millisecond}, func(p *Platform, st *store.Store) testGateway {
		return newFakeSink(p, st, echo)
	})
	c := dial(t, p)
	r := bufio.NewReader(c)
	getHealth(t, c, r)
	if rest := readToEOF(t, c, r); rest != "" {
		t.Errorf("after the idle timeout the server sent %q", rest)
	}
}

// A client that sends the headers and then trickles (or stalls) the body
// is answered 408 and cut off within the body timeout.
func TestSlowBodyIsCut(t *testing.T) {
	t.Parallel()
	p, sink := startAPIConfig(t, Config{BodyTimeout: 100 * time.Millisecond})
	c := dial(t, p)
	head := "POST /api/lanes/demo/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Content-Length: 100\r\n\r\n{\"text\":"
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	got := readToEOF(t, c, c)
	if !strings.HasPrefix(got, "HTTP/1.1 408") || !strings.Contains(got, "not received within") {
		t.Errorf("answer to a stalled body: %q", got)
	}
	if n := sink.received(); n != 0 {
		t.Errorf("%d messages reached the gateway", n)
	}
}

// startAPIConfig is runAPI with the echo sink.
func startAPIConfig(t *testing.T, cfg Config) (*Platform, *fakeSink) {
	t.Helper()
	var sink *fakeSink
	p := runAPI(t, cfg, func(p *Platform, st *store.Store) testGateway {
		sink = newFakeSink(p, st, echo)
		return sink
	})
	return p, sink
}

// With max_connections 2 and both connections held open, a request on
// another connection is answered 503 with Retry-After at once rather than
// waiting for the slot, and a health probe is answered 200 at once; both
// connections are closed after their answer. (The slot's release and the
// canned refusal beyond the overflow are in internal/netlimit's tests.)
func TestMaxConnectionsRefusesAtOnceButServesHealth(t *testing.T) {
	t.Parallel()
	// Two held: the two connections below then each have an overflow
	// place, whenever the server gets to close the one before.
	p, _ := startAPIConfig(t, Config{MaxConnections: 2})
	for range 2 {
		held := dial(t, p)
		getHealth(t, held, bufio.NewReader(held))
	}

	refused := roundTrip(t, dial(t, p), "GET /api/lanes/demo/approvals HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if refused.StatusCode != http.StatusServiceUnavailable || refused.Header.Get("Retry-After") == "" || !refused.Close {
		t.Fatalf("a request beyond max_connections: %s %v close=%v; want 503 with Retry-After, closed", refused.Status, refused.Header, refused.Close)
	}
	probe := roundTrip(t, dial(t, p), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if probe.StatusCode != http.StatusOK || !probe.Close {
		t.Fatalf("a health probe beyond max_connections: %s close=%v; want 200, closed", probe.Status, probe.Close)
	}
}

// roundTrip writes one raw request on c and reads its answer.
func roundTrip(t *testing.T, c net.Conn, request string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(safety))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// silentTurn is a sink whose turns say nothing until release is closed.
func silentTurn(release <-chan struct{}) func(*Platform, gateway.Inbound) {
	return func(p *Platform, in gateway.Inbound) {
		<-release
		echo(p, in)
	}
}

// streamLines posts a message asking for SSE and returns its lines.
func streamLines(t *testing.T, p *Platform) *bufio.Scanner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(`{"text":"think"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return bufio.NewScanner(resp.Body)
}

// nextLine returns the stream's next non-empty line.
func nextLine(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	for sc.Scan() {
		if sc.Text() != "" {
			return sc.Text()
		}
	}
	t.Fatalf("stream ended: %v", sc.Err())
	return ""
}

// A silent turn's stream gets keep-alive comments; and the per-request
// body deadline does not end a stream that outlives it.
func TestSSEKeepAliveDuringSilentTurn(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	p := runAPI(t, Config{KeepAliveInterval: 40 * time.Millisecond, BodyTimeout: 50 * time.Millisecond},
		func(p *Platform, st *store.Store) testGateway {
			return newFakeSink(p, st, silentTurn(release))
		})
	sc := streamLines(t, p)
	// Three comments span several body timeouts.
	for i := 0; i < 3; i++ {
		if line := nextLine(t, sc); line != ": keep-alive" {
			t.Fatalf("line %d of a silent stream: %q, want the keep-alive comment", i, line)
		}
	}
	close(release)
	for {
		line := nextLine(t, sc)
		if line == "event: done" {
			return
		}
		if line != ": keep-alive" && !strings.HasPrefix(line, "event: delta") && !strings.HasPrefix(line, "data: ") {
			t.Fatalf("unexpected line %q", line)
		}
	}
}

// net/http's own complaints reach the zap log, not stderr.
func TestHTTPServerErrorsGoToTheLog(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.WarnLevel)
	p := runAPI(t, Config{Logger: zap.New(core), Handlers: map[string]http.Handler{
		"/twice": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(200)
			w.WriteHeader(500) // net/http logs "superfluous response.WriteHeader call"
		}),
	}}, func(p *Platform, st *store.Store) testGateway { return newFakeSink(p, st, echo) })
	resp, err := http.Get("http://" + p.Addr() + "/twice")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The server logs before the handler returns, so before the answer ends.
	entries := logs.FilterMessageSnippet("superfluous").All()
	if len(entries) != 1 || entries[0].LoggerName != "api.http" || entries[0].Level != zapcore.WarnLevel {
		t.Errorf("net/http's error log entries: %+v", logs.All())
	}
}
