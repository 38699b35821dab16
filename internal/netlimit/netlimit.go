// Package netlimit bounds how many connections a listener serves at once,
// and refuses the rest at once rather than leaving them waiting.
package netlimit

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener serves at most n connections at once. It used to stop
// accepting at the cap, so further clients waited in the kernel's backlog:
// a health probe then waited behind 300 long requests and a working daemon
// looked dead for seconds. Now every connection is accepted: the first n
// are served, up to n more are served as overflow (Guard answers them 503
// with Retry-After, or serves an exempt path such as /healthz, then closes
// them), and beyond that a canned 503 is written and the connection
// closed, so goroutines and buffers stay bounded. The local API
// (api.max_connections) and the webhook listener (webhooks.max_connections)
// both serve through one.
type limitListener struct {
	net.Listener
	slots    chan struct{} // one token per connection served normally
	overflow chan struct{} // one token per overflow connection
	draining chan struct{} // one token per refused connection being drained
}

// Listen wraps ln so that at most n connections are served at once and
// up to n more are answered as overflow. Serve its connections through
// Guard (with ConnContext as the server's ConnContext).
func Listen(ln net.Listener, n int) net.Listener {
	if n < 1 {
		n = 1
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), overflow: make(chan struct{}, n),
		draining: make(chan struct{}, maxDraining)}
}

// Accept returns the next connection, served normally while a slot is
// free and as overflow otherwise; a connection beyond both is refused here
// and the next one accepted.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return newLimitedConn(c, l.slots, false), nil
		default:
		}
		select {
		case l.overflow <- struct{}{}:
			oc := newLimitedConn(c, l.overflow, true)
			oc.readBy = time.Now().Add(overflowReadLimit)
			_ = c.SetReadDeadline(oc.readBy)
			return oc, nil
		default:
		}
		l.refuse(c)
	}
}

// overflowReadLimit is how long an overflow connection has to send its
// request: the server's own header timeout is far longer, and silent
// connections holding every overflow place would turn health probes away.
const overflowReadLimit = 2 * time.Second

// cannedRefusal is what a connection beyond the overflow gets, written
// without reading its request.
const cannedRefusal = "HTTP/1.1 503 Service Unavailable\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 1\r\n" +
	"Connection: close\r\n" +
	"Content-Length: 33\r\n\r\n" +
	"too many connections: retry soon\n"

// maxDraining bounds the refused connections read to their end at once.
const maxDraining = 64

// refuse answers c the canned 503 and closes it. The write goes into a
// fresh socket's empty buffer, so it does not hold Accept up. Closing with
// the request unread would make the kernel answer with a reset, which the
// client may see instead of the 503: so up to maxDraining refused
// connections are read (at most 64 KiB, for at most a second) on a
// goroutine of their own before they are closed; beyond that, at once.
func (l *limitListener) refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.Write([]byte(cannedRefusal))
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	select {
	case l.draining <- struct{}{}:
		go func() {
			defer func() { <-l.draining }()
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
			_ = c.Close()
		}()
	default:
		_ = c.Close()
	}
}

// limitedConn frees its slot on the first Close.
type limitedConn struct {
	net.Conn
	over    bool
	readBy  time.Time // an overflow connection's last moment to read (zero: none)
	release func()
}

// SetReadDeadline keeps an overflow connection's reads within
// overflowReadLimit of its accept, whatever the server asks.
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if !c.readBy.IsZero() && (t.IsZero() || t.After(c.readBy)) {
		t = c.readBy
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline is SetReadDeadline and the write deadline.
func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func newLimitedConn(c net.Conn, slots chan struct{}, over bool) *limitedConn {
	return &limitedConn{Conn: c, over: over, release: sync.OnceFunc(func() { <-slots })}
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// CloseWrite half-closes a TCP connection: the server does so before
// closing after an error answer (413, 408), so the client reads the answer
// rather than a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type overflowKey struct{}

// ConnContext is an http.Server's ConnContext that lets Guard tell an
// overflow connection (next, when not nil, adds its own values first).
func ConnContext(next func(context.Context, net.Conn) context.Context) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		if lc, ok := c.(*limitedConn); ok && lc.over {
			ctx = context.WithValue(ctx, overflowKey{}, true)
		}
		return ctx
	}
}

// Overflow reports whether r came on a connection beyond the cap.
func Overflow(r *http.Request) bool {
	over, _ := r.Context().Value(overflowKey{}).(bool)
	return over
}

// Guard answers a request on an overflow connection 503 with Retry-After
// and closes the connection, except the exempt paths (a health probe),
// which are served and then the connection closed: whatever the load,
// they never wait for a slot.
func Guard(next http.Handler, exempt ...string) http.Handler {
	served := make(map[string]bool, len(exempt))
	for _, p := range exempt {
		served[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Overflow(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if served[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many connections: retry soon", http.StatusServiceUnavailable)
	})
}
