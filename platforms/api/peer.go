package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/user"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/procnet"
)

// Without api.token the listener is on loopback, where every local user can
// connect: the transcripts, the admin routes and a new lane (whose commands
// run as the daemon's user) would be theirs. So a request without the token
// is answered only when its connection comes from the daemon's own user,
// root, or a member of api.allow_group. The kernel names the user owning
// the client's socket (procnet); it is looked up once per connection, at
// its first request that needs it. With a token set the token decides, for
// every user alike.

// peerLogEvery bounds how often a refused or unidentified peer is logged.
const peerLogEvery = time.Minute

// peerPolicy says which local users may use the API without a token.
type peerPolicy struct {
	own   uint32
	group string // api.allow_group; "" lets no group in
	gid   string
	// groupsOf returns the group ids of a user (os/user; tests fake it).
	groupsOf func(uid uint32) ([]string, error)

	mu     sync.Mutex
	member map[uint32]bool // per uid: in group; users and groups are read once
	desc   string          // String's, made at start
}

// newPeerPolicy lets in the daemon's own user and root, and the members of
// group ("" for none), which must exist: it is resolved now, at start.
func newPeerPolicy(group string) (*peerPolicy, error) {
	p := &peerPolicy{own: uint32(os.Getuid()), group: group, groupsOf: userGroups, member: map[uint32]bool{}}
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("api: api.allow_group %q: %v: %w", group, err, gateway.ErrConfig)
		}
		p.gid = g.Gid
	}
	p.desc = p.describe()
	return p, nil
}

func userGroups(uid uint32) ([]string, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, err
	}
	return u.GroupIds()
}

// allows reports whether uid may use the API without a token. A uid with no
// user entry is in no group; an error reading the user databases refuses
// (and is tried again on the next connection).
func (p *peerPolicy) allows(uid uint32) (bool, error) {
	if uid == 0 || uid == p.own {
		return true, nil
	}
	if p.gid == "" {
		return false, nil
	}
	p.mu.Lock()
	in, seen := p.member[uid]
	p.mu.Unlock()
	if seen {
		return in, nil
	}
	gids, err := p.groupsOf(uid)
	var unknown user.UnknownUserIdError
	switch {
	case errors.As(err, &unknown):
		in = false
	case err != nil:
		return false, fmt.Errorf("api: groups of uid %d: %w", uid, err)
	default:
		in = slices.Contains(gids, p.gid)
	}
	p.mu.Lock()
	p.member[uid] = in
	p.mu.Unlock()
	return in, nil
}

// String names who is let in, for refusals and the log.
func (p *peerPolicy) String() string {
	if p.desc != "" {
		return p.desc
	}
	return p.describe()
}

func (p *peerPolicy) describe() string {
	s := "root and uid " + strconv.FormatUint(uint64(p.own), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(p.own), 10)); err == nil {
		s += " (" + u.Username + ")"
	}
	if p.group != "" {
		s += " and members of group " + p.group
	}
	return s
}

// peerKey is the context key of a connection's *peer.
type peerKey struct{}

// peer is a connection's client end; uid looks its owner up once.
type peer struct {
	uid func() (uint32, error)
}

// connContext gives each connection its peer. It runs in the server's
// accept loop, so it only records the addresses; the lookup runs on the
// connection's first request that needs it.
func (p *Platform) connContext(ctx context.Context, c net.Conn) context.Context {
	local, lok := c.LocalAddr().(*net.TCPAddr)
	remote, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return ctx // no peer: refused without a token
	}
	l, r := local.AddrPort(), remote.AddrPort()
	return context.WithValue(ctx, peerKey{}, &peer{uid: sync.OnceValues(func() (uint32, error) { return p.peerUID(l, r) })})
}

// checkPeer answers 401 to a request without a token from a local user the
// policy does not let in, on every path but the public ones (/healthz).
// With a token set the routes check it themselves and this does nothing.
func (p *Platform) checkPeer(next http.Handler) http.Handler {
	if p.cfg.Token != "" {
		return next
	}
	public := map[string]bool{}
	for _, path := range p.cfg.Public {
		public[path] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if msg := p.refusePeer(r); msg != "" {
			SetSecurityHeaders(w.Header())
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatewayd"`)
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refusePeer returns why r's user may not use the API without a token, or
// "" when it may. What cannot be determined is refused.
func (p *Platform) refusePeer(r *http.Request) string {
	pr, _ := r.Context().Value(peerKey{}).(*peer)
	if pr == nil {
		return p.unknownPeer(errors.New("the connection has no TCP addresses"))
	}
	uid, err := pr.uid()
	if err != nil {
		return p.unknownPeer(err)
	}
	ok, err := p.policy.allows(uid)
	if err != nil {
		return p.unknownPeer(err)
	}
	if ok {
		return ""
	}
	if n, log := p.refusedLog.take(time.Now()); log {
		p.log.Warn("api.peer_refused", zap.Uint32("uid", uid), zap.String("path", r.URL.Path), zap.Int("suppressed", n))
	}
	return fmt.Sprintf("uid %d may not use this API without a token: without api.token it answers only %s (set api.token and send it, or add the user to api.allow_group)", uid, p.policy)
}

func (p *Platform) unknownPeer(err error) string {
	if n, log := p.unknownLog.take(time.Now()); log {
		p.log.Warn("api.peer_unknown", zap.String("reason", err.Error()), zap.Int("suppressed", n))
	}
	return "could not tell which local user this connection comes from, so it is refused without a token: " + err.Error()
}

// peerUID is the lookup of connContext: the kernel's socket tables, or a
// test's.
func (p *Platform) peerUID(local, remote netip.AddrPort) (uint32, error) {
	if p.lookupUID != nil {
		return p.lookupUID(local, remote)
	}
	return procnet.Proc.PeerUID(local, remote)
}

// rateLog lets a refusal be logged at most once per interval, so a client
// retrying in a loop cannot flood the log; it counts the ones left out.
type rateLog struct {
	every      time.Duration
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// take reports whether to log now and how many were left out since the
// last one logged.
func (l *rateLog) take(now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return 0, false
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return n, true
}
