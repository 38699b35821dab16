package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// Idempotent messages, the way Stripe's idempotency keys work: a POST whose
// "id" names a message already recorded is not run again. Its answer,
// recorded when it was first produced, is returned with the same body
// (JSON, or the data of a single SSE "done" event) and the header
// Idempotent-Replayed: true; while the message still runs, the replay waits
// for that answer like the original request. What a repeated id gets:
//
//	answer recorded                              200, the recorded body
//	message received, running, or its answer
//	  still on its way through the outbox        waits, then 200, the body
//	different lane, text or user                 422 "id reused with a different request"
//	failed, refused or cut off                   409 {"error": ..., "state": ...,
//	                                             "answer": the refusal, if any};
//	                                             send it again under a new id
//
// A refusal ("too many messages are waiting", "could not save") is an
// answer, but replaying it as a 200 would tell an idempotent client its
// message is done when it never ran; the 409 says to send it again.
//
// GET /api/lanes/{lane}/messages/{id} shows a message's state and recorded
// answer without waiting.

const replayedHeader = "Idempotent-Replayed"

// replayAction is what a repeated message id gets.
type replayAction int

const (
	replayAnswer   replayAction = iota // the recorded answer
	replayWait                         // wait for the answer, then replay it
	replayMismatch                     // 422: the id names another request
	replayNoAnswer                     // 409: the message ended without an answer
)

// decideReplay picks the replay's action from what the store knows of the
// message; lane and req are the repeated request.
func decideReplay(x store.Exchange, lane string, req messageRequest) replayAction {
	switch {
	case x.SessionKey != laneAddress(lane).SessionKey() || x.Text != req.Text || x.SenderID != req.User:
		return replayMismatch
	case x.State == store.InboundFailed, x.State == store.InboundIgnored:
		return replayNoAnswer
	case x.Answer != nil:
		return replayAnswer
	case x.State == store.InboundReceived, x.State == store.InboundProcessing, x.AnswerPending:
		return replayWait
	}
	return replayNoAnswer
}

// noAnswerWhy explains, per inbox state, why a message has no answer.
var noAnswerWhy = map[string]string{
	store.InboundFailed:  "failed or was cut off by a restart",
	store.InboundIgnored: "was refused",
	store.InboundDone:    "was answered before answers were recorded",
}

// noReplay is the 409 body for a message that ended without an answer to
// replay; Answer is the refusal it got, if it got one.
type noReplay struct {
	State  string          `json:"state"`
	Error  string          `json:"error"`
	Answer json.RawMessage `json:"answer,omitempty"`
}

// replayRecorded answers req as a replay if its id names a recorded
// message, and reports whether it did (or answered an error).
func (p *Platform) replayRecorded(w http.ResponseWriter, r *http.Request, lane string, req messageRequest) bool {
	_, err := p.cfg.Answers.Exchange(r.Context(), PlatformName, req.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false
	case err != nil:
		p.log.Error("api.exchange_failed", zap.String("message", req.ID), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "the message id could not be checked; try again")
		return true
	}
	p.replay(w, r, lane, req)
	return true
}

// replay answers a repeated message id. It registers before it reads the
// store, so an answer recorded after the read still reaches it.
func (p *Platform) replay(w http.ResponseWriter, r *http.Request, lane string, req messageRequest) {
	rw := p.register(r.Context(), req.ID, lane, true)
	written := errNotAnswered
	defer func() { p.leave(r.Context(), req.ID, rw, written) }()
	x, err := p.cfg.Answers.Exchange(r.Context(), PlatformName, req.ID)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "the message id could not be checked; try again")
		return
	}
	switch decideReplay(x, lane, req) {
	case replayMismatch:
		writeError(w, http.StatusUnprocessableEntity,
			"id reused with a different request: a message with this id was sent before with another lane, text or user")
	case replayNoAnswer:
		writeJSON(w, http.StatusConflict, noReplay{State: x.State, Answer: x.Answer, Error: fmt.Sprintf(
			"message %q %s, so it has no answer to replay; send it again with a new id", req.ID, noAnswerWhy[x.State])})
	case replayAnswer:
		written = writeReplay(w, r, x.Answer)
	case replayWait:
		select {
		case <-rw.done:
			if state := rw.endedWithout(); state != "" {
				written = writeUnanswered(w, req.ID, state)
				break
			}
			written = writeReplay(w, r, rw.answerBody())
		case <-r.Context().Done():
			written = errClientGone
		case <-p.stop:
			written = errShuttingDown
			writeError(w, http.StatusServiceUnavailable, "gatewayd is shutting down; the message is recorded and will be answered after the restart")
		}
	}
}

// writeReplay writes a recorded answer as the request asked for it.
func writeReplay(w http.ResponseWriter, r *http.Request, body []byte) error {
	if wantsStream(r) {
		return startEvents(w, true).emitRaw("done", body)
	}
	return writeBody(w, body, true)
}

// messageState is the body of GET /api/lanes/{lane}/messages/{id}.
type messageState struct {
	ID    string `json:"id"`
	Lane  string `json:"lane"`
	State string `json:"state"` // received | processing | done | failed | ignored
	// Response is the recorded answer (what POST returned or will replay),
	// null until there is one.
	Response json.RawMessage `json:"response"`
}

func (p *Platform) getMessage(w http.ResponseWriter, r *http.Request) {
	lane, id := r.PathValue("lane"), r.PathValue("id")
	if !laneName.MatchString(lane) {
		writeError(w, http.StatusBadRequest, "lane name must be 1-128 characters of A-Z a-z 0-9 . _ -")
		return
	}
	x, err := p.cfg.Answers.Exchange(r.Context(), PlatformName, id)
	switch {
	case errors.Is(err, store.ErrNotFound), err == nil && x.SessionKey != laneAddress(lane).SessionKey():
		writeError(w, http.StatusNotFound, fmt.Sprintf("no message %q on lane %q", id, lane))
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, "the message could not be looked up; try again")
		return
	}
	writeJSON(w, http.StatusOK, messageState{ID: id, Lane: lane, State: x.State, Response: x.Answer})
}
