package netlimit

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordConn is a connection whose writes are kept and whose closes are
// counted: what refuseRaw and a slot's release do to it.
type recordConn struct {
	net.Conn
	mu     sync.Mutex
	buf    bytes.Buffer
	closed int
	done   chan struct{} // closed at the first Close
}

func newRecordConn() *recordConn { return &recordConn{done: make(chan struct{})} }

func (c *recordConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}
func (c *recordConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed++; c.closed == 1 {
		close(c.done)
	}
	return nil
}
func (c *recordConn) Read([]byte) (int, error)         { return 0, io.EOF } // the request, read to its end
func (c *recordConn) SetWriteDeadline(time.Time) error { return nil }
func (c *recordConn) SetReadDeadline(time.Time) error  { return nil }

// sliceListener accepts the given connections in order, then fails.
type sliceListener struct{ conns []net.Conn }

func (l *sliceListener) Accept() (net.Conn, error) {
	if len(l.conns) == 0 {
		return nil, net.ErrClosed
	}
	c := l.conns[0]
	l.conns = l.conns[1:]
	return c, nil
}
func (l *sliceListener) Close() error   { return nil }
func (l *sliceListener) Addr() net.Addr { return &net.TCPAddr{} }

// With a cap of 2: two connections are served, two more are overflow, the
// fifth gets the canned 503 and is closed, and Accept goes on to the
// next; a slot freed (once, whatever the number of Closes) is taken again.
func TestListenServesOverflowsThenRefuses(t *testing.T) {
	t.Parallel()
	inner := &sliceListener{}
	for range 5 {
		inner.conns = append(inner.conns, newRecordConn())
	}
	refused := inner.conns[4].(*recordConn)
	l := Listen(inner, 2)
	var got []*limitedConn
	for range 4 {
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.(*limitedConn))
	}
	for i, c := range got {
		if want := i >= 2; c.over != want {
			t.Errorf("connection %d: overflow %v, want %v", i, c.over, want)
		}
	}
	if c, err := l.Accept(); err == nil {
		t.Fatalf("a fifth connection was accepted past the cap and the overflow: %+v", c)
	}
	<-refused.done // closed once read to its end
	refused.mu.Lock()
	defer refused.mu.Unlock()
	if refused.closed != 1 || !strings.HasPrefix(refused.buf.String(), "HTTP/1.1 503 ") || !strings.Contains(refused.buf.String(), "Retry-After: 1\r\n") {
		t.Fatalf("the connection beyond the overflow: closed %d times, got %q; want the canned 503 and one close", refused.closed, refused.buf.String())
	}
	got[0].Close()
	got[0].Close() // a second Close must not free another slot
	next, again := newRecordConn(), newRecordConn()
	inner.conns = append(inner.conns, next, again)
	c, err := l.Accept()
	if err != nil || c.(*limitedConn).over || c.(*limitedConn).Conn != next {
		t.Fatalf("after a slot was freed the next connection was not served normally: %+v, %v", c, err)
	}
	if _, err := l.Accept(); err == nil {
		t.Fatal("a double Close freed two slots: the connection after was accepted")
	}
	<-again.done // refused
}

// Through a real HTTP server on 127.0.0.1 with one slot held by a long
// request: another request is answered 503 with Retry-After at once, a
// health probe is answered 200 at once, and a connection beyond the
// overflow gets the canned 503; once the slot is free, requests are served.
func TestGuardAnswersAtOnceWhenFull(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	closed := make(chan struct{}, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "slow done")
	})
	mux.HandleFunc("/other", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "other") })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           Guard(mux, "/healthz"),
		ConnContext:       ConnContext(nil),
		ReadHeaderTimeout: time.Minute,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				closed <- struct{}{}
			}
		},
	}
	go srv.Serve(Listen(ln, 1))
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	slow := make(chan string, 1)
	go func() { _, body := get(t, client, base+"/slow"); slow <- body }()
	<-entered

	if code, body := get(t, client, base+"/other"); code != http.StatusServiceUnavailable || !strings.Contains(body, "retry") {
		t.Fatalf("a request beyond the cap: %d %q, want 503", code, body)
	}
	<-closed // the overflow connection is closed after its answer
	resp, err := client.Get(base + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("503 without Retry-After: %v", resp.Header)
	}
	<-closed
	if code, body := get(t, client, base+"/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("health probe while full: %d %q, want 200 ok", code, body)
	}
	<-closed

	// A silent connection takes the only overflow place: the next is
	// refused before its request is read.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	beyond, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer beyond.Close()
	status, err := bufio.NewReader(beyond).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 503") {
		t.Fatalf("beyond the overflow: %q, %v; want the canned 503", status, err)
	}
	// The silent connection is closed by the server once its short read
	// time is up (not the server's minute-long header timeout), and the
	// overflow place serves a probe again.
	idle.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the silent overflow connection: %v, want it closed by the server", err)
	}
	<-closed
	if code, _ := get(t, client, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("health probe once the silent connection was gone: %d", code)
	}
	<-closed

	close(release)
	if body := <-slow; body != "slow done" {
		t.Fatalf("the long request: %q", body)
	}
	<-closed
	if code, body := get(t, client, base+"/other"); code != http.StatusOK || body != "other" {
		t.Fatalf("after the slot was freed: %d %q, want 200", code, body)
	}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
