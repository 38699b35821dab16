// Package netlimit bounds how many connections a listener serves at once.
package netlimit

import (
	"net"
	"sync"
)

// limitListener serves at most a fixed number of connections at once:
// Accept waits until one of them is closed, so further clients wait in the
// kernel's backlog instead of costing a goroutine and buffers each. (The
// same idea as golang.org/x/net/netutil.LimitListener, which this module
// does not depend on.) The local API (api.max_connections) and the
// webhook listener (webhooks.max_connections) both serve through one.
type limitListener struct {
	net.Listener
	slots     chan struct{} // one token per connection being served
	done      chan struct{} // closed by Close: a waiting Accept gives up
	closeOnce sync.Once
}

// Listen wraps ln so that at most n connections are served at once.
func Listen(ln net.Listener, n int) net.Listener { return newLimitListener(ln, n) }

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept takes a slot, then a connection; the slot is given back when the
// connection is closed.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

// Close stops the listener and any Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn frees its slot on the first Close.
type limitedConn struct {
	net.Conn
	release func()
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
