package gateway

import (
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// approverRule is codex.approvers: in a shared room, what a turn asks
// (an approval, a question, a schedule's removal) is decided by who
// started the turn or by an admin of the platform; with "anyone", by any
// allowed member.
type approverRule struct {
	anyone bool                       // codex.approvers: anyone
	admins map[string]map[string]bool // platform → admin user ids
}

func newApproverRule(cfg Config) approverRule {
	admins := make(map[string]map[string]bool)
	for platform, ids := range cfg.Admins {
		admins[platform] = make(map[string]bool, len(ids))
		for _, id := range ids {
			admins[platform][id] = true
		}
	}
	return approverRule{anyone: cfg.Approvers == config.ApproversAnyone, admins: admins}
}

// requester is who decides for the turn asking on threadID in the lane
// at addr: "" when anyone allowed does (a private chat, the API, or
// codex.approvers: anyone); ext.RequesterUnknown when the turn carries no
// requester, so a stranger's press cannot decide for a turn whose author
// was lost.
func (r approverRule) requester(addr Address, requesterOf func(string) (string, string), threadID string) (id, name string) {
	if r.anyone || !ext.GroupPlace(addr.Kind) {
		return "", ""
	}
	if id, name = requesterOf(threadID); id == "" {
		return ext.RequesterUnknown, ""
	}
	return id, name
}

// may reports whether sender decides what requester's turn asks on
// platform; platformAdmin is the platform's own word that the sender
// administers the place (Discord: Manage Channels).
func (r approverRule) may(platform, requester, sender string, platformAdmin bool) bool {
	return requester == "" || (sender == requester && requester != ext.RequesterUnknown) || r.admin(platform, sender, platformAdmin)
}

// admin reports whether sender administers platform: named in its
// admins list, or the platform says so.
func (r approverRule) admin(platform, sender string, platformAdmin bool) bool {
	return platformAdmin || r.admins[platform][sender]
}
