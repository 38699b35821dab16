package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// messageRequest is the body of POST /api/lanes/{lane}/messages.
type messageRequest struct {
	Text string `json:"text"`
	User string `json:"user"`
	// ID, when set, makes the message idempotent: a second POST with the
	// same id is not run again but answered like the first (replay.go).
	ID string `json:"id"`
	// files are a multipart message's uploads, spooled to disk.
	files *upload
}

// Response is the answer to a message (and the data of the SSE "done"
// event).
type Response struct {
	ID       string   `json:"id"`
	Reply    string   `json:"reply"`
	ThreadID string   `json:"thread_id,omitempty"`
	TurnID   string   `json:"turn_id,omitempty"`
	Status   string   `json:"status"` // turn status, or "notice" for a command's answer
	Notices  []string `json:"notices,omitempty"`
	// Approvals are the approval requests asked in the lane while this
	// request waited, decided or not (their question text is among the
	// notices too). A JSON client finds the open ones with GET
	// .../approvals while its request blocks on the turn.
	Approvals []Approval `json:"approvals,omitempty"`
	// Questions are Codex's question requests asked in the lane while this
	// request waited, answered or not (each question's text is among the
	// notices too); GET .../questions lists the open ones.
	Questions []Question `json:"questions,omitempty"`
	// Files are the files the agent sent while this request waited
	// (files.go); their captions are not among the notices.
	Files []FileRef `json:"files,omitempty"`
	// Progress is the turn's last work view and Summary its one-line
	// summary ("1 command, 3 s"), when the lane's /verbose is not off and
	// Codex did something worth showing (progress.go).
	Progress *gateway.WorkView `json:"progress,omitempty"`
	Summary  string            `json:"summary,omitempty"`
	// Fork is /fork's answer: the lane it made (its session key) and that
	// lane's Codex thread.
	Fork *gateway.ForkInfo `json:"fork,omitempty"`
}

var laneName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

const maxBody = 4 * MaxTextBytes // JSON escaping can quadruple the text

// Errors a request ends with when its response was not written; the rows
// it carried go back to the lane.
var (
	errClientGone   = errors.New("api: client went away before the answer")
	errShuttingDown = errors.New("api: shutting down before the answer")
	errNotAnswered  = errors.New("api: request ended without its answer")
)

func (p *Platform) postMessage(w http.ResponseWriter, r *http.Request) {
	var lane string
	var req messageRequest
	var ok bool
	var up *upload // nil unless multipart
	if isMultipart(r) {
		lane, req, up, ok = p.readUpload(w, r)
		// The gateway has its copies once deliver returns (removed there
		// at once); this is for the ways out before it.
		defer up.remove()
	} else {
		lane, req, ok = readMessage(w, r)
	}
	if !ok {
		return
	}
	if req.ID != "" {
		if p.replayRecorded(w, r, lane, req) {
			return
		}
	}
	id := req.ID
	if id == "" {
		id = p.nextID(generatedIDPrefix)
	}
	wt, ok := p.registerPrimary(r.Context(), id, lane)
	if !ok {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusConflict, "a request with this id is being recorded right now; send it again to get its answer")
		return
	}
	in := gateway.Inbound{Address: laneAddress(lane), MessageID: id, SenderID: req.User, SenderName: req.User,
		Text: req.Text, Mentioned: true, ReceivedAt: time.Now(), Attachments: req.files.attachments()}
	outcome := p.deliver(w, r, in)
	// Stored under the lane or refused: the spool's copies are not needed
	// while the request waits for its turn, maybe for minutes.
	up.remove()
	if outcome != delivered {
		p.leave(r.Context(), id, wt, errNotAnswered)
		// A duplicate was recorded by a request that ended since we looked.
		if outcome == duplicate && !p.replayRecorded(w, r, lane, req) {
			writeError(w, http.StatusInternalServerError, "the message id is recorded but could not be found; try again")
		}
		return
	}
	written := errNotAnswered
	defer func() { p.leave(r.Context(), id, wt, written) }()
	if wantsStream(r) {
		written = p.stream(w, r, id, wt)
		return
	}
	select {
	case <-wt.done:
		if state := wt.endedWithout(); state != "" {
			written = writeUnanswered(w, id, state)
			return
		}
		written = writeBody(w, wt.answerBody(), false)
	case <-r.Context().Done():
		written = errClientGone
	case <-p.stop:
		written = errShuttingDown
		writeError(w, http.StatusServiceUnavailable, "gatewayd is shutting down; the message is recorded and will be answered after the restart")
	}
}

// readMessage validates the lane and the body; on failure it has answered.
func readMessage(w http.ResponseWriter, r *http.Request) (string, messageRequest, bool) {
	lane := r.PathValue("lane")
	var req messageRequest
	if !laneName.MatchString(lane) {
		writeError(w, http.StatusBadRequest, "lane name must be 1-128 characters of A-Z a-z 0-9 . _ -")
		return "", req, false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes (text: %d)", maxBody, MaxTextBytes))
			return "", req, false
		}
		writeError(w, http.StatusBadRequest, "body must be JSON: {\"text\": \"...\", \"user\": \"...\"}")
		return "", req, false
	}
	return lane, req, checkMessage(w, &req)
}

// checkMessage validates the fields of a message (JSON or multipart); on
// failure it has answered. A message with files may have no text.
func checkMessage(w http.ResponseWriter, req *messageRequest) bool {
	switch {
	case strings.TrimSpace(req.Text) == "" && req.files.count() == 0:
		writeError(w, http.StatusBadRequest, "text is empty")
		return false
	case len(req.Text) > MaxTextBytes:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("text exceeds %d bytes", MaxTextBytes))
		return false
	case len(req.ID) > 128:
		writeError(w, http.StatusBadRequest, "id is longer than 128 characters")
		return false
	}
	if req.User == "" {
		req.User = "local"
	}
	return true
}

func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// deliverOutcome is what became of handing a message to the gateway.
type deliverOutcome int

const (
	delivered deliverOutcome = iota // recorded: wait for the answer
	duplicate                       // recorded before: answer as a replay
	refused                         // an error was answered
)

// deliver hands the message to the gateway and answers the errors.
func (p *Platform) deliver(w http.ResponseWriter, r *http.Request, in gateway.Inbound) deliverOutcome {
	p.mu.Lock()
	sink := p.sink
	p.mu.Unlock()
	if sink == nil {
		writeError(w, http.StatusServiceUnavailable, "gatewayd is not running yet")
		return refused
	}
	dup, err := sink.Deliver(r.Context(), in)
	var limited *gateway.SenderLimitError
	switch {
	case errors.As(err, &limited): // nothing was stored: the client sends it again later
		w.Header().Set("Retry-After", strconv.Itoa(int(limited.RetryAfter/time.Second)))
		writeError(w, http.StatusTooManyRequests, strings.TrimPrefix(limited.Error(), "gateway: "))
		return refused
	case errors.Is(err, gateway.ErrShuttingDown):
		writeError(w, http.StatusServiceUnavailable, "gatewayd is shutting down; try again shortly")
		return refused
	case err != nil:
		p.log.Error("api.deliver_failed", zap.String("message", in.MessageID), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "the message could not be recorded; try again")
		return refused
	case dup:
		return duplicate
	}
	return delivered
}

// stream answers with server-sent events: "delta" events carry new text of
// the growing reply, "notice" events lane notices, "approval" events the
// approval requests waiting for a decision, "question" events Codex's
// question requests waiting for answers, "progress" events the turn's
// work view (gateway.WorkView as JSON), and "done" the Response. A
// notice is reported delivered once its event is written; it returns the
// outcome of writing the rest.
func (p *Platform) stream(w http.ResponseWriter, r *http.Request, id string, wt *waiter) error {
	ev := startEvents(w, false)
	emitted, notices, approvals, questions, progressSeq := "", 0, 0, 0, 0
	sendProgress := func() error {
		v, seq := wt.progressSince(progressSeq)
		progressSeq = seq
		if v == nil {
			return nil
		}
		return ev.emit("progress", v)
	}
	push := func(text string) error {
		rest, ok := strings.CutPrefix(text, emitted)
		emitted = text
		switch {
		case !ok:
			return ev.emit("replace", text)
		case rest != "":
			return ev.emit("delta", rest)
		}
		return nil
	}
	sendNew := func(ns []note, as []Approval, qs []Question) error {
		for ; notices < len(ns); notices++ {
			event, data := "notice", any(ns[notices].text)
			if f := ns[notices].file; f != nil {
				event, data = "file", f
			}
			if err := ev.emit(event, data); err != nil {
				return err
			}
			p.report(r.Context(), id, wt, []int64{ns[notices].row}, nil)
		}
		for ; approvals < len(as); approvals++ {
			if err := ev.emit("approval", as[approvals]); err != nil {
				return err
			}
		}
		for ; questions < len(qs); questions++ {
			if err := ev.emit("question", qs[questions]); err != nil {
				return err
			}
		}
		return nil
	}
	if ev.err != nil {
		return ev.err
	}
	// A turn may think for minutes without a word; a comment line now and
	// then keeps proxies and clients from taking the stream for dead.
	keepAlive := time.NewTicker(p.cfg.KeepAliveInterval)
	defer keepAlive.Stop()
	for {
		select {
		case <-keepAlive.C:
			if err := ev.comment("keep-alive"); err != nil {
				return err
			}
		case <-wt.changed:
			preview, ns, as, qs := wt.snapshot()
			if err := sendNew(ns, as, qs); err != nil {
				return err
			}
			if err := sendProgress(); err != nil {
				return err
			}
			if err := push(preview); err != nil {
				return err
			}
		case <-wt.done:
			if state := wt.endedWithout(); state != "" {
				_ = ev.emit("error", unansweredMessage(id, state))
				return errNotAnswered
			}
			_, ns, as, qs := wt.snapshot()
			if err := sendNew(ns, as, qs); err != nil {
				return err
			}
			if err := sendProgress(); err != nil {
				return err
			}
			if final := wt.finalOut(); final.Turn != nil {
				if err := push(final.Text); err != nil {
					return err
				}
			}
			return ev.emitRaw("done", wt.answerBody())
		case <-r.Context().Done():
			return errClientGone
		case <-p.stop:
			_ = ev.emit("error", "gatewayd is shutting down")
			return errShuttingDown
		}
	}
}

// note is a lane notice a request carries; row is its outbox row (0: none
// to report).
type note struct {
	row  int64
	text string
	file *FileRef // a file the agent sent; text is its caption
}

// waiter is one request waiting for an answer.
type waiter struct {
	lane    string
	key     string        // the lane's session key
	message string        // the message whose answer it waits for
	replay  bool          // a repeated message id: waits for the answer only, takes no notices
	changed chan struct{} // preview or notices changed (capacity 1)
	done    chan struct{} // closed by finish
	// rows are the outbox rows it carries, not yet reported; guarded by
	// the platform's mu.
	rows []int64

	mu        sync.Mutex
	preview   string
	notes     []note
	approvals []Approval
	questions []Question // one per request id, though each question of it comes as a notice
	final     gateway.Outbound
	// progress is the turn's latest work view; progressSeq counts views.
	progress    *gateway.WorkView
	progressSeq int
	body        []byte // the recorded answer
	// ended is the inbox state of a message that ended without an answer
	// (shared answers only), "" otherwise.
	ended string
	// seen is the id of the last relay event it was given (relay.go).
	seen int64
}

func newWaiter(lane, message string, replay bool) *waiter {
	return &waiter{lane: lane, key: laneAddress(lane).SessionKey(), message: message, replay: replay,
		changed: make(chan struct{}, 1), done: make(chan struct{})}
}

// advance moves the waiter past relay event id; false if it had it.
func (w *waiter) advance(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id <= w.seen {
		return false
	}
	w.seen = id
	return true
}

func (w *waiter) seenPos() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

func (w *waiter) signal() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *waiter) setPreview(text string) {
	w.mu.Lock()
	w.preview = text
	w.mu.Unlock()
	w.signal()
}

// addNotice records a lane notice; approval or question, when set, is the
// request the notice asks about. A question request with several
// questions comes as one notice per question, and is recorded once.
func (w *waiter) addNotice(n note, approval *gateway.PendingApproval, question *gateway.QuestionPrompt) {
	w.mu.Lock()
	w.notes = append(w.notes, n)
	if approval != nil {
		w.approvals = append(w.approvals, newApproval(w.lane, *approval))
	}
	if question != nil && !w.hasQuestionLocked(question.Pending.ID) {
		w.questions = append(w.questions, newQuestion(w.lane, question.Pending))
	}
	w.mu.Unlock()
	w.signal()
}

// hasNoteText reports whether the request has a notice of this text.
func (w *waiter) hasNoteText(text string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.notes, func(n note) bool { return n.text == text && n.file == nil })
}

func (w *waiter) hasQuestionLocked(id string) bool {
	return slices.ContainsFunc(w.questions, func(q Question) bool { return q.ID == id })
}

// finish records the answer and its recorded body; the caller holds the
// platform lock and has taken w off the waiters, so it runs once.
func (w *waiter) finish(out gateway.Outbound, body []byte) {
	w.mu.Lock()
	w.final, w.body = out, body
	w.mu.Unlock()
	close(w.done)
}

func (w *waiter) snapshot() (string, []note, []Approval, []Question) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.preview, slices.Clone(w.notes), slices.Clone(w.approvals), slices.Clone(w.questions)
}

func (w *waiter) finalOut() gateway.Outbound {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.final
}

func (w *waiter) answerBody() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body
}

// responseFor is the answer out gives to message out.InReplyTo, with the
// notices, approvals and questions the request that sent it (if still
// there) took.
func responseFor(out gateway.Outbound, sender *waiter) Response {
	resp := Response{ID: out.InReplyTo, Reply: out.Text, Status: "notice", Fork: out.Fork}
	if t := out.Turn; t != nil {
		resp.ThreadID, resp.TurnID, resp.Status = t.ThreadID, t.TurnID, t.Status
	}
	if sender != nil {
		_, notes, approvals, questions := sender.snapshot()
		for _, n := range notes {
			if n.file != nil {
				resp.Files = append(resp.Files, *n.file)
				continue
			}
			resp.Notices = append(resp.Notices, n.text)
		}
		resp.Approvals, resp.Questions = approvals, questions
	}
	withProgress(&resp, sender)
	return resp
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	// An encoding error means the client went away; nobody is left to tell.
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// writeBody writes a recorded answer as the JSON response, byte for byte
// (plus the newline every JSON response ends with).
func writeBody(w http.ResponseWriter, body []byte, replayed bool) error {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(append(slices.Clip(body), '\n')); err != nil {
		return fmt.Errorf("api: write answer: %w", err)
	}
	return nil
}

// events writes server-sent events; err is the first write error.
type events struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

// startEvents sends the headers of an event stream.
func startEvents(w http.ResponseWriter, replayed bool) *events {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	w.WriteHeader(http.StatusOK)
	ev := &events{w: w, rc: http.NewResponseController(w)}
	ev.flush()
	return ev
}

func (e *events) emit(event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("api: encode %s event: %w", event, err)
	}
	return e.emitRaw(event, b)
}

func (e *events) emitRaw(event string, data []byte) error {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, data)
	}
	e.flush()
	return e.err
}

// comment writes an SSE comment line, which clients ignore.
func (e *events) comment(text string) error {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, ": %s\n\n", text)
	}
	e.flush()
	return e.err
}

func (e *events) flush() {
	if e.err == nil {
		if err := e.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			e.err = fmt.Errorf("api: flush events: %w", err)
		}
	}
}
