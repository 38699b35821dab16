package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// Chat approvals on the API lane (codex.approvals: chat). A request that
// is open on the lane when Codex asks gets the question as an "approval"
// SSE event (and in the "approvals" array of its JSON answer), besides the
// plain-text notice every client already shows. The decision comes back on
// POST /api/lanes/{lane}/approvals/{id}; GET /api/lanes/{lane}/approvals
// lists what is pending, for a client whose message request is still
// blocked on the very turn that waits for the decision.

// Approval is one pending approval as the API shows it.
type Approval struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // "command" | "fileChange"
	Command string `json:"command,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// GrantRoot, Files and Network are what a request would allow beyond
	// its command: writes under a root for the session, the paths of a
	// file change ("path (kind)"), a host to reach.
	GrantRoot string   `json:"grant_root,omitempty"`
	Files     []string `json:"files,omitempty"`
	Network   string   `json:"network,omitempty"`
	// Escalation says how the request would widen the lane's boundary
	// (codex.allow_escalation): only an admin allows it, once, so
	// Decisions then lacks acceptForSession.
	Escalation string    `json:"escalation,omitempty"`
	ThreadID   string    `json:"thread_id,omitempty"`
	TurnID     string    `json:"turn_id,omitempty"`
	ItemID     string    `json:"item_id,omitempty"`
	Asked      time.Time `json:"asked"`
	// Decide is the path to POST the decision to; Decisions are the values
	// it accepts.
	Decide    string   `json:"decide"`
	Decisions []string `json:"decisions"`
}

// decisions are the values POST .../approvals/{id} accepts: the app-server's
// v2 answers (docs/codex-app-server.md §10.4); "cancel" also ends the turn as interrupted.
var decisions = []string{"accept", "acceptForSession", "decline", "cancel"}

func validDecision(d string) bool {
	for _, ok := range decisions {
		if d == ok {
			return true
		}
	}
	return false
}

func newApproval(lane string, p gateway.PendingApproval) Approval {
	a := Approval{ID: p.ID, Kind: p.Kind, Command: p.Command, Cwd: p.Cwd, Reason: p.Reason,
		GrantRoot: p.GrantRoot, Files: p.Files, Network: p.Network, Escalation: p.Escalation,
		ThreadID: p.ThreadID, TurnID: p.TurnID, ItemID: p.ItemID, Asked: p.Asked,
		Decide: "/api/lanes/" + lane + "/approvals/" + p.ID}
	for _, d := range decisions {
		if p.Escalation == "" || d != "acceptForSession" {
			a.Decisions = append(a.Decisions, d)
		}
	}
	return a
}

// maxDecisionBody bounds the body of a decision; it is a few words.
const maxDecisionBody = 4 << 10

// decisionRequest is the body of POST /api/lanes/{lane}/approvals/{id}.
type decisionRequest struct {
	Decision string `json:"decision"`
	User     string `json:"user"` // who decided, for the log; default "local"
}

// DecisionResponse answers an accepted decision.
type DecisionResponse struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
}

// laneAddress is the address of an API lane, as postMessage delivers it.
func laneAddress(lane string) gateway.Address {
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneAPI, ChatID: lane}
}

// running says whether Run has started (with the gateway's sides it
// checked), or answers 503: the routes are served (Handler) before it.
func (p *Platform) running(w http.ResponseWriter) bool {
	p.mu.Lock()
	sink := p.sink
	p.mu.Unlock()
	if sink == nil {
		writeError(w, http.StatusServiceUnavailable, "gatewayd is not running yet")
		return false
	}
	return true
}

func (p *Platform) listApprovals(w http.ResponseWriter, r *http.Request) {
	lane := r.PathValue("lane")
	if !laneName.MatchString(lane) {
		writeError(w, http.StatusBadRequest, "lane name must be 1-128 characters of A-Z a-z 0-9 . _ -")
		return
	}
	if !p.running(w) {
		return
	}
	out := []Approval{} // an empty list, not null, when nothing is pending
	for _, pa := range p.cfg.Approvals.PendingApprovals(laneAddress(lane).SessionKey()) {
		out = append(out, newApproval(lane, pa))
	}
	if len(out) == 0 && p.callOwner(w, r, callListApprovals, lane, "", nil) {
		return // the lane's turn runs on another node
	}
	writeJSON(w, http.StatusOK, map[string][]Approval{"approvals": out})
}

func (p *Platform) decideApproval(w http.ResponseWriter, r *http.Request) {
	lane, id := r.PathValue("lane"), r.PathValue("id")
	if !laneName.MatchString(lane) {
		writeError(w, http.StatusBadRequest, "lane name must be 1-128 characters of A-Z a-z 0-9 . _ -")
		return
	}
	var req decisionRequest
	var tooBig *http.MaxBytesError
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxDecisionBody)).Decode(&req); err != nil {
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", maxDecisionBody))
			return
		}
		writeError(w, http.StatusBadRequest, `body must be JSON: {"decision": "accept" | "acceptForSession" | "decline" | "cancel", "user": "..."}`)
		return
	}
	if !validDecision(req.Decision) {
		writeError(w, http.StatusBadRequest, "decision must be accept, acceptForSession, decline or cancel")
		return
	}
	if !p.running(w) {
		return
	}
	user := req.User
	if user == "" {
		user = "local"
	}
	if err := p.cfg.Approvals.Decide(laneAddress(lane).SessionKey(), id, req.Decision, user); err != nil {
		// Request ids are each node's own: another node's a1 is not ours.
		if (errors.Is(err, gateway.ErrApprovalNotFound) || errors.Is(err, gateway.ErrApprovalWrongLane)) && p.callOwner(w, r, callDecide, lane, id, mustJSON(req)) {
			return // asked by a turn on another node
		}
		p.decisionFailed(w, lane, id, err)
		return
	}
	writeJSON(w, http.StatusOK, DecisionResponse{ID: id, Decision: req.Decision})
}

// decisionFailed answers a refused decision with the status its cause
// calls for.
func (p *Platform) decisionFailed(w http.ResponseWriter, lane, id string, err error) {
	switch {
	case errors.Is(err, gateway.ErrApprovalNotFound):
		writeError(w, http.StatusNotFound, "approval "+id+" is not pending (answered, expired or unknown)")
	case errors.Is(err, gateway.ErrApprovalWrongLane):
		writeError(w, http.StatusForbidden, "approval "+id+" belongs to another lane")
	case errors.Is(err, gateway.ErrBadDecision):
		writeError(w, http.StatusBadRequest, "decision must be accept, acceptForSession, decline or cancel")
	case errors.Is(err, gateway.ErrNotApprover), errors.Is(err, gateway.ErrAdminsOnly):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, gateway.ErrOnceOnly):
		writeError(w, http.StatusBadRequest, "approval "+id+" can be allowed once only (accept), never for the session")
	default:
		p.log.Error("api.decide_failed", zap.String("lane", lane), zap.String("approval", id), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "the decision could not be applied; try again")
	}
}
