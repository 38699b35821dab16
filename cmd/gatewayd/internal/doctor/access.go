package doctor

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/internal/procnet"
)

// checkAPIAccess says who may use the local API: without api.token the
// daemon answers only its own user, root and api.allow_group's members
// (platforms/api/peer.go), so the line names them.
func (d *doctor) checkAPIAccess(cfg *config.Config) {
	if cfg.API.Token != "" {
		d.pass("local API: api.token set; every client needs it, whichever local user it runs as")
		return
	}
	uid, whose := daemonUID(cfg)
	line := fmt.Sprintf("local API: only uid %d%s and root without a token", uid, userLabel(uid))
	if g := cfg.API.AllowGroup; g != "" {
		if _, err := user.LookupGroup(g); err != nil {
			d.fail(fmt.Sprintf("api.allow_group %q: %v (the daemon will not start)", g, err),
				"create the group (groupadd "+g+") or unset api.allow_group")
			return
		}
		line += ", and members of group " + g
	}
	d.pass("%s (%s)", line, whose)
}

// daemonUID is the user the daemon serves as: the running one's (the
// owner of the socket listening on api.listen), else the state
// directory's owner (the package makes it the service user's), else ours.
func daemonUID(cfg *config.Config) (uint32, string) {
	if a, err := net.ResolveTCPAddr("tcp", cfg.API.Listen); err == nil {
		if uid, err := procnet.Proc.ListenerUID(a.AddrPort()); err == nil {
			return uid, "the running daemon's user"
		}
	}
	if fi, err := os.Stat(cfg.StateDir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return st.Uid, "the owner of " + cfg.StateDir
		}
	}
	return uint32(os.Getuid()), "this user, if it runs the daemon"
}

func userLabel(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return " (" + u.Username + ")"
	}
	return ""
}
