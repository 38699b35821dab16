package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
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
	// same id is recognised as a duplicate (409) and not run again.
	ID string `json:"id"`
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
}

var laneName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

const maxBody = 4 * MaxTextBytes // JSON escaping can quadruple the text

func (p *Platform) postMessage(w http.ResponseWriter, r *http.Request) {
	lane := r.PathValue("lane")
	if !laneName.MatchString(lane) {
		writeError(w, http.StatusBadRequest, "lane name must be 1-128 characters of A-Z a-z 0-9 . _ -")
		return
	}
	var req messageRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes (text: %d)", maxBody, MaxTextBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "body must be JSON: {\"text\": \"...\", \"user\": \"...\"}")
		return
	}
	switch {
	case strings.TrimSpace(req.Text) == "":
		writeError(w, http.StatusBadRequest, "text is empty")
		return
	case len(req.Text) > MaxTextBytes:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("text exceeds %d bytes", MaxTextBytes))
		return
	case len(req.ID) > 128:
		writeError(w, http.StatusBadRequest, "id is longer than 128 characters")
		return
	}
	id := req.ID
	if id == "" {
		id = p.nextID("api-")
	}
	user := req.User
	if user == "" {
		user = "local"
	}
	wt, err := p.register(id, lane)
	if err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	defer p.unregister(id, wt)
	if !p.deliver(w, r, gateway.Inbound{Address: gateway.Address{Platform: PlatformName, Kind: gateway.LaneAPI, ChatID: lane},
		MessageID: id, SenderID: user, SenderName: user, Text: req.Text, Mentioned: true, ReceivedAt: time.Now()}) {
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		p.stream(w, r, id, wt)
		return
	}
	select {
	case <-wt.done:
		writeJSON(w, http.StatusOK, wt.response(id))
	case <-r.Context().Done():
	case <-p.stop:
		writeError(w, http.StatusServiceUnavailable, "gatewayd is shutting down; the message is recorded and will be answered after the restart")
	}
}

// deliver hands the message to the gateway and answers the errors; it
// reports whether the request should wait for the reply.
func (p *Platform) deliver(w http.ResponseWriter, r *http.Request, in gateway.Inbound) bool {
	p.mu.Lock()
	sink := p.sink
	p.mu.Unlock()
	var dup bool
	var err error
	if sink == nil {
		writeError(w, http.StatusServiceUnavailable, "gatewayd is not running yet")
		return false
	}
	if cs, ok := sink.(gateway.CheckedSink); ok {
		dup, err = cs.DeliverChecked(r.Context(), in)
	} else {
		err = sink.Deliver(r.Context(), in)
	}
	switch {
	case errors.Is(err, gateway.ErrShuttingDown):
		writeError(w, http.StatusServiceUnavailable, "gatewayd is shutting down; try again shortly")
		return false
	case err != nil:
		p.log.Error("api.deliver_failed", zap.String("message", in.MessageID), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "the message could not be recorded; try again")
		return false
	case dup:
		writeError(w, http.StatusConflict, "duplicate message id: it was received before and is answered once")
		return false
	}
	return true
}

// stream answers with server-sent events: "delta" events carry new text of
// the growing reply, "notice" events lane notices, "approval" events the
// approval requests waiting for a decision, and "done" the Response.
func (p *Platform) stream(w http.ResponseWriter, r *http.Request, id string, wt *waiter) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	emitted, notices, approvals := "", 0, 0
	emit := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	push := func(text string) {
		if rest, ok := strings.CutPrefix(text, emitted); ok {
			if rest != "" {
				emit("delta", rest)
			}
		} else {
			emit("replace", text)
		}
		emitted = text
	}
	if flusher != nil {
		flusher.Flush()
	}
	// A turn may think for minutes without a word; a comment line now and
	// then keeps proxies and clients from taking the stream for dead.
	keepAlive := time.NewTicker(p.cfg.KeepAliveInterval)
	defer keepAlive.Stop()
	for {
		select {
		case <-keepAlive.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			if flusher != nil {
				flusher.Flush()
			}
		case <-wt.changed:
			preview, ns, as := wt.snapshot()
			for ; notices < len(ns); notices++ {
				emit("notice", ns[notices])
			}
			for ; approvals < len(as); approvals++ {
				emit("approval", as[approvals])
			}
			push(preview)
		case <-wt.done:
			resp := wt.response(id)
			for ; notices < len(resp.Notices); notices++ {
				emit("notice", resp.Notices[notices])
			}
			for ; approvals < len(resp.Approvals); approvals++ {
				emit("approval", resp.Approvals[approvals])
			}
			if resp.Status != "notice" {
				push(resp.Reply)
			}
			emit("done", resp)
			return
		case <-r.Context().Done():
			return
		case <-p.stop:
			emit("error", "gatewayd is shutting down")
			return
		}
	}
}

// waiter is one request waiting for its answer.
type waiter struct {
	lane    string
	changed chan struct{} // preview or notices changed (capacity 1)
	done    chan struct{} // closed by finish

	mu        sync.Mutex
	preview   string
	notices   []string
	approvals []Approval
	final     gateway.Outbound
}

func newWaiter(lane string) *waiter {
	return &waiter{lane: lane, changed: make(chan struct{}, 1), done: make(chan struct{})}
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

// addNotice records a lane notice; approval, when set, is the request the
// notice asks about.
func (w *waiter) addNotice(text string, approval *gateway.PendingApproval) {
	w.mu.Lock()
	w.notices = append(w.notices, text)
	if approval != nil {
		w.approvals = append(w.approvals, newApproval(w.lane, *approval))
	}
	w.mu.Unlock()
	w.signal()
}

// finish records the answer; the caller holds the platform lock, so it
// runs once per waiter.
func (w *waiter) finish(out gateway.Outbound) {
	w.mu.Lock()
	w.final = out
	w.mu.Unlock()
	close(w.done)
}

func (w *waiter) snapshot() (string, []string, []Approval) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.preview, append([]string(nil), w.notices...), append([]Approval(nil), w.approvals...)
}

func (w *waiter) response(id string) Response {
	w.mu.Lock()
	defer w.mu.Unlock()
	resp := Response{ID: id, Reply: w.final.Text, Status: "notice", Notices: append([]string(nil), w.notices...),
		Approvals: append([]Approval(nil), w.approvals...)}
	if t := w.final.Turn; t != nil {
		resp.ThreadID, resp.TurnID, resp.Status = t.ThreadID, t.TurnID, t.Status
	}
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
