package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// Codex's questions on the API lane (request_user_input, Plan mode), shown
// like chat approvals: a request that is open on the lane when Codex asks
// gets the request as one "question" SSE event (and in the "questions"
// array of its JSON answer), besides the plain-text notice of each of its
// questions. The answers come back on POST /api/lanes/{lane}/questions/{id};
// GET /api/lanes/{lane}/questions lists what is pending, for a client
// whose message request is blocked on the turn that waits for them.

// Question is one pending request_user_input request as the API shows it:
// one or more questions, answered together or one at a time.
type Question struct {
	ID        string        `json:"id"`
	ThreadID  string        `json:"thread_id,omitempty"`
	TurnID    string        `json:"turn_id,omitempty"`
	ItemID    string        `json:"item_id,omitempty"`
	Asked     time.Time     `json:"asked"`
	Questions []QuestionAsk `json:"questions"`
	// Answer is the path to POST the answers to.
	Answer string `json:"answer"`
}

// QuestionAsk is one question of a request. With IsOther, or without
// options, any text is an answer; otherwise only an option's label.
type QuestionAsk struct {
	ID       string           `json:"id"`
	Header   string           `json:"header"`
	Question string           `json:"question"`
	Options  []QuestionOption `json:"options"`
	IsOther  bool             `json:"is_other"`
	IsSecret bool             `json:"is_secret"`
	Answered bool             `json:"answered"`
}

// QuestionOption is one choice of a question.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

func newQuestion(lane string, p gateway.PendingQuestion) Question {
	q := Question{ID: p.ID, ThreadID: p.ThreadID, TurnID: p.TurnID, ItemID: p.ItemID, Asked: p.Asked,
		Questions: make([]QuestionAsk, 0, len(p.Questions)), Answer: "/api/lanes/" + lane + "/questions/" + p.ID}
	for _, cq := range p.Questions {
		ask := QuestionAsk{ID: cq.ID, Header: cq.Header, Question: cq.Question, IsOther: cq.IsOther, IsSecret: cq.IsSecret,
			Options: make([]QuestionOption, 0, len(cq.Options)), Answered: slices.Contains(p.Answered, cq.ID)}
		for _, o := range cq.Options {
			ask.Options = append(ask.Options, QuestionOption{Label: o.Label, Description: o.Description})
		}
		q.Questions = append(q.Questions, ask)
	}
	return q
}

// maxAnswerBody bounds the body of an answer: free-text answers are
// sentences, not documents.
const maxAnswerBody = 64 << 10

// answerRequest is the body of POST /api/lanes/{lane}/questions/{id}.
type answerRequest struct {
	// Answers maps question ids to the answer: option labels, or text.
	Answers map[string][]string `json:"answers"`
	User    string              `json:"user"` // who answered; default "local"
}

// AnswerResponse answers accepted answers: Answered are the question ids
// this call answered.
type AnswerResponse struct {
	ID       string   `json:"id"`
	Answered []string `json:"answered"`
}

const answerShape = `body must be JSON: {"answers": {"<question id>": ["<option label or text>"]}, "user": "..."}`

func (p *Platform) listQuestions(w http.ResponseWriter, r *http.Request) {
	lane := r.PathValue("lane")
	if !laneName.MatchString(lane) {
		writeError(w, http.StatusBadRequest, "lane name must be 1-128 characters of A-Z a-z 0-9 . _ -")
		return
	}
	if !p.running(w) {
		return
	}
	out := []Question{} // an empty list, not null, when nothing is pending
	for _, pq := range p.cfg.Questions.PendingQuestions(laneAddress(lane).SessionKey()) {
		out = append(out, newQuestion(lane, pq))
	}
	if len(out) == 0 && p.callOwner(w, r, callListQuestions, lane, "", nil) {
		return // the lane's turn runs on another node
	}
	writeJSON(w, http.StatusOK, map[string][]Question{"questions": out})
}

func (p *Platform) answerQuestion(w http.ResponseWriter, r *http.Request) {
	lane, id := r.PathValue("lane"), r.PathValue("id")
	if !laneName.MatchString(lane) {
		writeError(w, http.StatusBadRequest, "lane name must be 1-128 characters of A-Z a-z 0-9 . _ -")
		return
	}
	req, ok := readAnswer(w, r)
	if !ok {
		return
	}
	if !p.running(w) {
		return
	}
	if err := p.cfg.Questions.AnswerQuestion(laneAddress(lane).SessionKey(), id, req.Answers, req.User); err != nil {
		// Request ids are each node's own: another node's q1 is not ours.
		if (errors.Is(err, gateway.ErrQuestionNotFound) || errors.Is(err, gateway.ErrQuestionWrongLane)) && p.callOwner(w, r, callAnswer, lane, id, mustJSON(req)) {
			return // asked by a turn on another node
		}
		p.answerFailed(w, lane, id, err)
		return
	}
	writeJSON(w, http.StatusOK, AnswerResponse{ID: id, Answered: slices.Sorted(maps.Keys(req.Answers))})
}

// readAnswer decodes the body; on failure it has answered. Whether the
// answers fit the questions is the gateway's to say.
func readAnswer(w http.ResponseWriter, r *http.Request) (answerRequest, bool) {
	var req answerRequest
	var tooBig *http.MaxBytesError
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAnswerBody)).Decode(&req); err != nil {
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", maxAnswerBody))
			return req, false
		}
		writeError(w, http.StatusBadRequest, answerShape)
		return req, false
	}
	if len(req.Answers) == 0 {
		writeError(w, http.StatusBadRequest, "answers is empty; "+answerShape)
		return req, false
	}
	if req.User == "" {
		req.User = "local"
	}
	return req, true
}

// answerFailed answers refused answers with the status their cause calls
// for; the gateway's text says what was wrong with them.
func (p *Platform) answerFailed(w http.ResponseWriter, lane, id string, err error) {
	switch {
	case errors.Is(err, gateway.ErrQuestionNotFound):
		writeError(w, http.StatusNotFound, "question "+id+" is not pending (answered, expired or unknown)")
	case errors.Is(err, gateway.ErrQuestionWrongLane):
		writeError(w, http.StatusForbidden, "question "+id+" belongs to another lane")
	case errors.Is(err, gateway.ErrNotApprover):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, gateway.ErrQuestionAnswered):
		writeError(w, http.StatusConflict, gatewayText(err))
	case errors.Is(err, gateway.ErrBadAnswer):
		writeError(w, http.StatusBadRequest, gatewayText(err))
	default:
		p.log.Error("api.answer_failed", zap.String("lane", lane), zap.String("question", id), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "the answer could not be applied; try again")
	}
}

// gatewayText is an error's text for the client, without the package
// prefix the gateway's errors start with.
func gatewayText(err error) string {
	return strings.TrimPrefix(err.Error(), "gateway: ")
}
