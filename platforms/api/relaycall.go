package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Calls to a lane's owner (cluster mode). A lane's pending approvals and
// questions live in the memory of the node running its turn. A node asked
// to list or answer them for a lane it does not run, finding none of its
// own, calls the lane's owner through the relay: the owner runs the same
// handler (ServeCall) and the reply, status and body, is written back
// as it came. A call is never passed on again, so two nodes that disagree
// about the lane's owner cannot bounce it between them.

// CallPrefix starts the ops of the platform's calls (ServeCall's).
const CallPrefix = "api"

// Ops of the calls.
const (
	callListQuestions = CallPrefix + "/questions.list"
	callAnswer        = CallPrefix + "/questions.answer"
	callListApprovals = CallPrefix + "/approvals.list"
	callDecide        = CallPrefix + "/approvals.decide"
)

// relayCall is what a call carries: the request's path values and body.
type relayCall struct {
	Lane string `json:"lane"`
	ID   string `json:"id,omitempty"`
	Body []byte `json:"body,omitempty"`
}

// relayReply is the owner's response to a call.
type relayReply struct {
	Code int    `json:"code"`
	Body []byte `json:"body"`
}

// relayCallTimeout bounds a call to a lane's owner.
const relayCallTimeout = 10 * time.Second

type forwardedKey struct{}

// forwarded reports whether r is a call run for another node.
func forwarded(r *http.Request) bool {
	v, _ := r.Context().Value(forwardedKey{}).(bool)
	return v
}

// callOwner answers r with the reply of the node owning lane and reports
// true; false when no other node owns it (nor a relay exists), and the
// caller answers from here.
func (p *Platform) callOwner(w http.ResponseWriter, r *http.Request, op, lane, id string, body []byte) bool {
	if p.cfg.Relay == nil || forwarded(r) || p.cfg.Relay.Serves(laneAddress(lane).SessionKey()) {
		return false
	}
	payload, err := json.Marshal(relayCall{Lane: lane, ID: id, Body: body})
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), relayCallTimeout)
	defer cancel()
	raw, err := p.cfg.Relay.CallOwner(ctx, laneAddress(lane).SessionKey(), op, payload)
	var rep relayReply
	switch {
	case errors.Is(err, ErrNoRemoteOwner):
		return false
	case r.Context().Err() != nil:
		return true // the client went away: nobody to answer
	case err != nil:
		p.log.Warn("api.owner_call_failed", zap.String("lane", lane), zap.String("op", op), zap.Error(err))
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "the node running this lane did not answer in time; try again")
		return true
	case json.Unmarshal(raw, &rep) != nil || rep.Code < 200 || rep.Code > 599:
		p.log.Warn("api.owner_call_garbled", zap.String("lane", lane), zap.String("op", op))
		writeError(w, http.StatusBadGateway, "the node running this lane answered something unreadable; try again")
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.Code)
	_, _ = w.Write(rep.Body) // the client's loss if it went away
	return true
}

// ServeCall runs a call another node made for lane sessionKey, owned
// here, and returns the reply.
func (p *Platform) ServeCall(ctx context.Context, sessionKey, op string, payload []byte) []byte {
	var c relayCall
	rec := &callRecorder{header: http.Header{}}
	handler, method := p.callHandler(op)
	switch {
	case json.Unmarshal(payload, &c) != nil || !laneName.MatchString(c.Lane):
		writeError(rec, http.StatusBadRequest, "malformed call from another node")
	case laneAddress(c.Lane).SessionKey() != sessionKey:
		writeError(rec, http.StatusBadRequest, "call for lane "+c.Lane+" made as another lane's")
	case handler == nil:
		writeError(rec, http.StatusBadRequest, "unknown call "+op+" from another node (a newer build?)")
	default:
		r, err := http.NewRequestWithContext(context.WithValue(ctx, forwardedKey{}, true), method, "/", bytes.NewReader(c.Body))
		if err != nil {
			writeError(rec, http.StatusInternalServerError, "the call could not be run")
			break
		}
		r.SetPathValue("lane", c.Lane)
		r.SetPathValue("id", c.ID)
		handler(rec, r)
	}
	out, err := json.Marshal(relayReply{Code: rec.status(), Body: rec.body.Bytes()})
	if err != nil {
		return nil
	}
	return out
}

func (p *Platform) callHandler(op string) (http.HandlerFunc, string) {
	switch op {
	case callListQuestions:
		return p.listQuestions, http.MethodGet
	case callAnswer:
		return p.answerQuestion, http.MethodPost
	case callListApprovals:
		return p.listApprovals, http.MethodGet
	case callDecide:
		return p.decideApproval, http.MethodPost
	}
	return nil, ""
}

// callRecorder is the response a call's handler writes, kept for the reply.
type callRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (c *callRecorder) Header() http.Header { return c.header }

func (c *callRecorder) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

func (c *callRecorder) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}

func (c *callRecorder) status() int {
	if c.code == 0 {
		return http.StatusOK
	}
	return c.code
}

// mustJSON encodes a request body decoded from JSON, so it cannot fail.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
