package netlimit

import (
	"errors"
	"net"
	"testing"
	"testing/synctest"
)

// chanListener is a net.Listener fed by the test: every connection put on
// conns is accepted. Channels let synctest see a blocked Accept.
type chanListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func newChanListener() *chanListener {
	return &chanListener{conns: make(chan net.Conn, 8), closed: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { close(l.closed); return nil }
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{} }

// pipeConn is one end of a net.Pipe; the other end is closed with it.
func pipeConn(t *testing.T) net.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { b.Close() })
	return a
}

type acceptResult struct {
	conn net.Conn
	err  error
}

func acceptAsync(l net.Listener) <-chan acceptResult {
	got := make(chan acceptResult, 1)
	go func() {
		c, err := l.Accept()
		got <- acceptResult{c, err}
	}()
	return got
}

// The N+1th connection is not accepted until one of the N is closed, and
// closing a connection twice frees one slot only.
func TestLimitListenerWaitsForAFreeSlot(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		inner := newChanListener()
		l := newLimitListener(inner, 2)
		for range 4 {
			inner.conns <- pipeConn(t)
		}
		a, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		third := acceptAsync(l)
		synctest.Wait()
		select {
		case r := <-third:
			t.Fatalf("a third connection was accepted while two were open: %v", r)
		default:
		}
		a.Close()
		a.Close() // a second Close must not free another slot
		synctest.Wait()
		r := <-third
		if r.err != nil {
			t.Fatalf("Accept after a close: %v", r.err)
		}
		fourth := acceptAsync(l)
		synctest.Wait()
		select {
		case r := <-fourth:
			t.Fatalf("a double Close freed two slots: %v accepted", r)
		default:
		}
		b.Close()
		synctest.Wait()
		if r := <-fourth; r.err != nil {
			t.Fatalf("Accept after the second close: %v", r.err)
		}
	})
}

// Closing the listener ends an Accept that waits for a slot.
func TestLimitListenerCloseEndsAWaitingAccept(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		inner := newChanListener()
		l := newLimitListener(inner, 1)
		inner.conns <- pipeConn(t)
		if _, err := l.Accept(); err != nil {
			t.Fatal(err)
		}
		waiting := acceptAsync(l)
		synctest.Wait()
		l.Close()
		if r := <-waiting; !errors.Is(r.err, net.ErrClosed) {
			t.Fatalf("waiting Accept after Close: %v, want net.ErrClosed", r.err)
		}
	})
}
