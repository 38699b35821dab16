package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/store"
)

var errInjected = errors.New("injected store failure")

// fakeStore is an in-memory Store with the contract's semantics and
// per-method error injection.
type fakeStore struct {
	mu          sync.Mutex
	schedules   map[int64]store.Schedule
	scheduleSeq int64
	lanes       map[string]*store.Lane
	inbound     []store.InboundRow
	journal     map[string]store.JournalEntry
	retries     map[string]fakeRetry // the lanes' turns to retry
	messages    []store.Message
	outbox      []store.OutboxMessage
	held        map[int64]bool              // outbox rows held (HoldOutbox)
	fail        map[string]error            // method name → error returned (persistent)
	inIdx       map[string]int64            // platform + message id → inbound id
	room        map[string][]store.RoomLine // the room's talk kept per lane
	turnIdx     map[string]bool             // session key + turn id committed
	firstDue    int                         // outbox rows before it are all settled
	bindings    []string                    // "bind:<thread>", "lost:<thread>" in order
	boundTo     map[string][]string         // thread → the lanes ever bound to it (lane_threads)
	now         func() time.Time
	// compactions ("<thread>:<before>:<after>") and rotations
	// ("<reason>:<keep>") recorded, in order.
	compactions []string
	rotations   []string
	state       map[string]string // SetState's values
	usage       []fakeTurnUsage   // the usage committed with each turn, in order
}

// fakeRetry is a lane's turn to retry and whether it was retried.
type fakeRetry struct {
	store.RetryTurn
	retried bool
}

// fakeTurnUsage is a committed turn's usage and the session it is of.
type fakeTurnUsage struct {
	sessionKey string
	sessionID  int64
	store.TurnUsage
}

func newFakeStore() *fakeStore {
	return &fakeStore{lanes: map[string]*store.Lane{}, journal: map[string]store.JournalEntry{}, retries: map[string]fakeRetry{},
		held: map[int64]bool{}, fail: map[string]error{}, inIdx: map[string]int64{}, turnIdx: map[string]bool{},
		state: map[string]string{}, now: time.Now}
}

func (s *fakeStore) failOn(method string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.fail, method)
	} else {
		s.fail[method] = err
	}
}

func (s *fakeStore) check(method string) error { return s.fail[method] }

func (s *fakeStore) Lane(_ context.Context, key string) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("Lane"); err != nil {
		return store.Lane{}, err
	}
	l, ok := s.lanes[key]
	if !ok {
		return store.Lane{}, store.ErrNotFound
	}
	return *l, nil
}

func (s *fakeStore) Transcript(_ context.Context, key string, limit int) ([]store.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[key]
	var out []store.Message
	for _, m := range s.messages {
		if m.SessionKey == key && l != nil && m.SessionID == l.SessionID {
			out = append(out, m)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func (s *fakeStore) EnsureLane(_ context.Context, k store.LaneKey) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("EnsureLane"); err != nil {
		return store.Lane{}, err
	}
	return s.ensureLocked(k), nil
}

func (s *fakeStore) ensureLocked(k store.LaneKey) store.Lane {
	l, ok := s.lanes[k.SessionKey]
	if !ok {
		l = &store.Lane{SessionKey: k.SessionKey, Platform: k.Platform, Kind: k.Kind, ChatID: k.ChatID,
			TopicID: k.TopicID, UserID: k.UserID, SessionID: int64(len(s.lanes)*1000 + 1), Generation: 1, SessionStartedAt: s.now()}
		s.lanes[k.SessionKey] = l
	}
	l.LastActiveAt = s.now()
	return *l
}

func (s *fakeStore) BindThread(_ context.Context, key string, gen int64, thread string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("BindThread"); err != nil {
		return err
	}
	l := s.lanes[key]
	if l == nil || l.Generation != gen {
		return store.ErrStaleGeneration
	}
	l.ThreadID, l.Binding = thread, store.BindingPending
	s.bindings = append(s.bindings, "bind:"+thread)
	s.recordBoundLocked(thread, key)
	return nil
}

func (s *fakeStore) MarkBindingLost(_ context.Context, key string, gen int64, thread, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("MarkBindingLost"); err != nil {
		return err
	}
	l := s.lanes[key]
	if l == nil || l.Generation != gen {
		return store.ErrStaleGeneration
	}
	l.Binding = store.BindingLost
	s.bindings = append(s.bindings, "lost:"+thread)
	return nil
}

func (s *fakeStore) ResetLane(_ context.Context, key, _ string) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("ResetLane"); err != nil {
		return store.Lane{}, err
	}
	l := s.lanes[key]
	if l == nil {
		return store.Lane{}, store.ErrNotFound
	}
	l.Generation++
	l.SessionID++
	l.ThreadID, l.Binding, l.Turns = "", store.BindingNone, 0
	l.SessionStartedAt = s.now()
	if e, ok := s.journal[key]; ok && e.InboundID > 0 && int(e.InboundID) <= len(s.inbound) {
		if st := &s.inbound[e.InboundID-1].State; *st == store.InboundReceived || *st == store.InboundProcessing {
			*st = store.InboundIgnored
		}
	}
	delete(s.journal, key)
	delete(s.retries, key)
	return *l, nil
}

func (s *fakeStore) RecordInbound(_ context.Context, in store.Inbound) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recordInboundLocked(in)
}

// RecordInboundTurn is RecordInbound and JournalTurn in one commit, as the
// real store's: a failure of either writes nothing, and a duplicate
// journals nothing.
func (s *fakeStore) RecordInboundTurn(_ context.Context, in store.Inbound, text string) (int64, bool, *store.JournalEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.Lane.SessionKey == "" {
		return 0, false, nil, fmt.Errorf("%w: RecordInboundTurn needs the message's lane", store.ErrInvalid)
	}
	if err := s.check("JournalTurn"); err != nil {
		return 0, false, nil, err
	}
	id, dup, err := s.recordInboundLocked(in)
	if err != nil || dup {
		return id, dup, nil, err
	}
	l := s.lanes[in.SessionKey]
	e := store.JournalEntry{SessionKey: in.SessionKey, Generation: l.Generation, InboundID: id,
		ThreadID: l.ThreadID, Text: text, StartedAt: in.ReceivedAt}
	if e.StartedAt.IsZero() {
		e.StartedAt = s.now()
	}
	s.journal[in.SessionKey] = e
	return id, false, &e, nil
}

func (s *fakeStore) recordInboundLocked(in store.Inbound) (int64, bool, error) {
	if err := s.check("RecordInbound"); err != nil {
		return 0, false, err
	}
	if in.Lane.SessionKey != "" { // the lane row is written in the same transaction
		if err := s.check("EnsureLane"); err != nil {
			return 0, false, err
		}
		l := s.lanes[s.ensureLocked(in.Lane).SessionKey]
		if in.LaneTitle != "" && l.Meta["title"] == "" {
			if l.Meta == nil {
				l.Meta = map[string]string{}
			}
			l.Meta["title"] = in.LaneTitle
		}
	}
	if id, ok := s.inIdx[in.Platform+"\x00"+in.MessageID]; ok {
		return id, true, nil
	}
	id := int64(len(s.inbound) + 1)
	s.inIdx[in.Platform+"\x00"+in.MessageID] = id
	s.inbound = append(s.inbound, store.InboundRow{ID: id, Inbound: in, State: store.InboundReceived})
	return id, false, nil
}

func (s *fakeStore) SetInboundState(_ context.Context, id int64, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("SetInboundState"); err != nil {
		return err
	}
	if id < 1 || int(id) > len(s.inbound) {
		return store.ErrNotFound
	}
	s.inbound[id-1].State = state
	return nil
}

func (s *fakeStore) RequeueInbound(_ context.Context, key string, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("RequeueInbound"); err != nil {
		return err
	}
	if id >= 1 && int(id) <= len(s.inbound) && s.inbound[id-1].SessionKey == key && s.inbound[id-1].State == store.InboundProcessing {
		s.inbound[id-1].State = store.InboundReceived
	}
	return nil
}

func (s *fakeStore) inboundState(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inbound[id-1].State
}

func (s *fakeStore) PendingInbound(context.Context) ([]store.InboundRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.InboundRow
	for _, r := range s.inbound {
		if r.State == store.InboundReceived || r.State == store.InboundProcessing {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *fakeStore) JournalTurn(_ context.Context, e store.JournalEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("JournalTurn"); err != nil {
		return err
	}
	s.journal[e.SessionKey] = e
	return nil
}

func (s *fakeStore) ClearJournal(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.journal, key)
	return nil
}

func (s *fakeStore) Journal(context.Context) ([]store.JournalEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.JournalEntry
	for _, e := range s.journal {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SessionKey < out[j].SessionKey })
	return out, nil
}

func (s *fakeStore) MarkCutOff(_ context.Context, e store.JournalEntry, notice store.OutboxMessage) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("MarkCutOff"); err != nil {
		return 0, err
	}
	cur, ok := s.journal[e.SessionKey]
	if !ok || cur.CutOff || cur.Generation != e.Generation || cur.InboundID != e.InboundID {
		return 0, store.ErrStaleGeneration
	}
	cur.CutOff = true
	s.journal[e.SessionKey] = cur
	s.setRetryLocked(store.RetryTurn{SessionKey: e.SessionKey, Generation: e.Generation, InboundID: e.InboundID,
		Text: e.Text, Reason: store.RetryCutOff})
	if e.InboundID > 0 && int(e.InboundID) <= len(s.inbound) {
		s.inbound[e.InboundID-1].State = store.InboundFailed
	}
	return s.enqueueLocked(notice), nil
}

func (s *fakeStore) RetryTurn(_ context.Context, key string) (store.RetryTurn, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("RetryTurn"); err != nil {
		return store.RetryTurn{}, false, err
	}
	r, ok := s.retries[key]
	l := s.lanes[key]
	if !ok || r.retried || l == nil || l.Generation != r.Generation {
		return store.RetryTurn{}, false, nil
	}
	return r.RetryTurn, true, nil
}

// setRetryLocked makes r the lane's turn to retry, stamped now.
func (s *fakeStore) setRetryLocked(r store.RetryTurn) {
	r.At = s.now()
	s.retries[r.SessionKey] = fakeRetry{RetryTurn: r}
}

func (s *fakeStore) CommitTurn(_ context.Context, t store.CompletedTurn) (store.CommitResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("CommitTurn"); err != nil {
		return store.CommitResult{}, err
	}
	l := s.lanes[t.SessionKey]
	if s.turnIdx[t.SessionKey+"\x00"+t.TurnID] {
		return store.CommitResult{Duplicate: true}, nil
	}
	s.turnIdx[t.SessionKey+"\x00"+t.TurnID] = true
	sid := t.SessionID
	now := s.now()
	s.messages = append(s.messages,
		store.Message{SessionID: sid, SessionKey: t.SessionKey, Role: "user", Text: t.UserText, TurnID: t.TurnID, CreatedAt: now})
	for i, in := range t.Steered {
		s.messages = append(s.messages, store.Message{SessionID: sid, SessionKey: t.SessionKey, Role: "user",
			Text: in.Text, TurnID: store.SteerTurnID(t.TurnID, i+1), CreatedAt: now})
		if in.InboundID > 0 && int(in.InboundID) <= len(s.inbound) {
			s.inbound[in.InboundID-1].State = store.InboundDone
		}
	}
	s.messages = append(s.messages,
		store.Message{SessionID: sid, SessionKey: t.SessionKey, Role: "assistant", Text: t.AssistantText, TurnID: t.TurnID, CreatedAt: now})
	if t.Usage.TurnTokens > 0 || t.Usage.ContextTokens > 0 {
		if sid == 0 { // the session of that generation
			sid = l.SessionID
		}
		s.usage = append(s.usage, fakeTurnUsage{sessionKey: t.SessionKey, sessionID: sid,
			TurnUsage: store.TurnUsage{TurnID: t.TurnID, Status: t.Status, At: now, Usage: t.Usage}})
	}
	if t.InboundID > 0 && int(t.InboundID) <= len(s.inbound) {
		s.inbound[t.InboundID-1].State = store.InboundDone
	}
	if r, ok := s.retries[t.SessionKey]; ok && t.Retries != nil && r.RetryTurn == *t.Retries {
		r.retried = true
		s.retries[t.SessionKey] = r
	}
	if l.Generation != t.Generation {
		return store.CommitResult{Stale: true}, nil
	}
	if t.Retryable {
		s.setRetryLocked(store.RetryTurn{SessionKey: t.SessionKey, Generation: t.Generation, InboundID: t.InboundID,
			Text: t.UserText, Reason: store.RetryTimedOut})
	}
	var res store.CommitResult
	l.Turns++
	if t.Confirm && l.ThreadID == t.ThreadID {
		l.Binding = store.BindingConfirmed
		res.Confirmed = true
	}
	delete(s.journal, t.SessionKey)
	for _, f := range t.Files { // before the reply, as the real store
		f.OutKind = store.OutboxFile
		s.enqueueLocked(f)
	}
	if t.Reply != nil {
		reply := *t.Reply // labelled as the real store labels a turn's reply
		reply.OutKind, reply.ThreadID, reply.TurnID, reply.TurnStatus = store.OutboxReply, t.ThreadID, t.TurnID, t.Status
		res.OutboxID = s.enqueueLocked(reply)
	}
	return res, nil
}

func (s *fakeStore) enqueueLocked(m store.OutboxMessage) int64 {
	m.ID = int64(len(s.outbox) + 1)
	m.State = store.OutboxPending
	m.NextAttemptAt = time.Time{}
	s.outbox = append(s.outbox, m)
	return m.ID
}

func (s *fakeStore) Enqueue(_ context.Context, m store.OutboxMessage) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("Enqueue"); err != nil {
		return 0, err
	}
	return s.enqueueLocked(m), nil
}

func (s *fakeStore) DueOutbox(_ context.Context, now time.Time, limit int) ([]store.OutboxMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.OutboxMessage
	for s.firstDue < len(s.outbox) && s.outbox[s.firstDue].State != store.OutboxPending {
		s.firstDue++
	}
	for _, m := range s.outbox[s.firstDue:] {
		if m.State == store.OutboxPending && !s.held[m.ID] && !m.NextAttemptAt.After(now) && len(out) < limit {
			m.SentParts = slices.Clone(m.SentParts)
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *fakeStore) MarkSent(ctx context.Context, id int64, pid string) error {
	if err := ctx.Err(); err != nil {
		return err // like the real store: a cancelled write is not applied
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outbox[id-1].State, s.outbox[id-1].PlatformMessageID = store.OutboxSent, pid
	return nil
}

// RecordPart is the real store's: idempotent, in order.
func (s *fakeStore) RecordPart(_ context.Context, id int64, part int, pid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("RecordPart"); err != nil {
		return err
	}
	m := &s.outbox[id-1]
	switch {
	case part < len(m.SentParts):
		return nil
	case part > len(m.SentParts):
		return fmt.Errorf("part %d before part %d: %w", part, len(m.SentParts), store.ErrInvalid)
	}
	m.SentParts = append(m.SentParts, pid)
	return nil
}

// MarkSentWithPart is RecordPart and MarkSent in one write, like the real
// store's: on error neither is applied.
func (s *fakeStore) MarkSentWithPart(ctx context.Context, id int64, part int, pid string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("MarkSentWithPart"); err != nil {
		return err
	}
	m := &s.outbox[id-1]
	switch {
	case part > len(m.SentParts):
		return fmt.Errorf("part %d before part %d: %w", part, len(m.SentParts), store.ErrInvalid)
	case part == len(m.SentParts):
		m.SentParts = append(m.SentParts, pid)
	}
	m.State, m.PlatformMessageID = store.OutboxSent, pid
	return nil
}

func (s *fakeStore) MarkRetry(_ context.Context, id int64, next time.Time, errText string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &s.outbox[id-1]
	m.Attempts++
	m.NextAttemptAt, m.LastError = next, errText
	return nil
}

func (s *fakeStore) MarkFailed(_ context.Context, id int64, errText string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outbox[id-1].State, s.outbox[id-1].LastError = store.OutboxFailed, errText
	return nil
}

func (s *fakeStore) HoldOutbox(_ context.Context, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outbox[id-1].State == store.OutboxPending {
		s.held[id] = true
	}
	return nil
}

func (s *fakeStore) UnholdLane(_ context.Context, key string) (int, error) {
	return s.unhold(func(m store.OutboxMessage) bool { return m.SessionKey == key }), nil
}

func (s *fakeStore) UnholdAll(context.Context) (int, error) {
	return s.unhold(func(store.OutboxMessage) bool { return true }), nil
}

func (s *fakeStore) unhold(match func(store.OutboxMessage) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id := range s.held {
		if match(s.outbox[id-1]) {
			delete(s.held, id)
			n++
		}
	}
	return n
}

func (s *fakeStore) RecordCompaction(_ context.Context, _, thread string, before, after int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compactions = append(s.compactions, fmt.Sprintf("%s:%d:%d", thread, before, after))
	return nil
}

// LaneUsage sums the recorded usage of the lane's turns committed in
// [from, to); the fake keeps no senders, so a sender's sum is empty.
func (s *fakeStore) LaneUsage(_ context.Context, key, sender string, from, to time.Time) (store.UsageTotals, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var u store.UsageTotals
	for _, tu := range s.usage {
		if sender == "" && tu.sessionKey == key && !tu.At.Before(from) && tu.At.Before(to) {
			u.Turns++
			u.Tokens += tu.Usage.TurnTokens
			u.Input += tu.Usage.InputTokens
			u.CachedInput += tu.Usage.CachedInputTokens
			u.Output += tu.Usage.OutputTokens
			u.Reasoning += tu.Usage.ReasoningTokens
		}
	}
	return u, nil
}

// LaneUsagePeriods is LaneUsage for the day and the month holding at.
func (s *fakeStore) LaneUsagePeriods(ctx context.Context, key, sender string, at time.Time, loc *time.Location) (store.UsagePeriods, error) {
	day, month := store.DayStart(at, loc), store.MonthStart(at, loc)
	d, _ := s.LaneUsage(ctx, key, sender, day, day.AddDate(0, 0, 1))
	m, _ := s.LaneUsage(ctx, key, sender, month, month.AddDate(0, 1, 0))
	return store.UsagePeriods{Day: d, Month: m}, nil
}

// LastTurnUsage is the usage of the latest turn of the lane's current
// session that reported any, as the real store's.
func (s *fakeStore) LastTurnUsage(_ context.Context, key string) (store.TurnUsage, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[key]
	if l == nil {
		return store.TurnUsage{}, false, fmt.Errorf("fake: last turn usage: %w", store.ErrNotFound)
	}
	for i := len(s.usage) - 1; i >= 0; i-- {
		if u := s.usage[i]; u.sessionKey == key && u.sessionID == l.SessionID {
			return u.TurnUsage, true, nil
		}
	}
	return store.TurnUsage{}, false, nil
}

// SetState records a gateway-wide value; "" deletes it.
func (s *fakeStore) SetState(_ context.Context, name, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("SetState"); err != nil {
		return err
	}
	if value == "" {
		delete(s.state, name)
	} else {
		s.state[name] = value
	}
	return nil
}

// State returns the value of name, "" when none is recorded.
func (s *fakeStore) State(_ context.Context, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state[name], nil
}

// rows counts transcript rows by role for a lane (all sessions).
func (s *fakeStore) rows(key string) (user, assistant int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.messages {
		if m.SessionKey != key {
			continue
		}
		switch m.Role {
		case "user":
			user++
		case "assistant":
			assistant++
		}
	}
	return user, assistant
}

func (s *fakeStore) lane(key string) store.Lane {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.lanes[key]
}

// LastTurnAt is the time of the last assistant row of the lane's current
// session, as the real store reads it.
func (s *fakeStore) LastTurnAt(_ context.Context, key string) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lanes[key]
	if !ok {
		return time.Time{}, store.ErrNotFound
	}
	var last time.Time
	for _, m := range s.messages {
		if m.SessionKey == key && m.SessionID == l.SessionID && m.Role == store.RoleAssistant && m.CreatedAt.After(last) {
			last = m.CreatedAt
		}
	}
	return last, nil
}

// RefuseInbound closes the inbound row, keeps its text as a user row and
// queues the answer, as the real store does in one transaction.
func (s *fakeStore) RefuseInbound(_ context.Context, r store.Refusal) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("RefuseInbound"); err != nil {
		return 0, err
	}
	if r.InboundID >= 1 && int(r.InboundID) <= len(s.inbound) {
		s.inbound[r.InboundID-1].State = store.InboundFailed
		if l, ok := s.lanes[r.Notice.SessionKey]; ok {
			s.messages = append(s.messages, store.Message{ID: int64(len(s.messages) + 1), SessionID: l.SessionID,
				SessionKey: l.SessionKey, Role: store.RoleUser, Text: r.Text, TurnID: store.RefusedTurnID(r.InboundID),
				PlatformMessageID: r.MessageID, CreatedAt: s.now()})
		}
	}
	return s.enqueueLocked(r.Notice), nil
}
