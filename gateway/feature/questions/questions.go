// Package questions asks a lane Codex's questions (request_user_input)
// and takes its answers.
package questions

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// Questions: in Plan mode the model asks the user with its
// request_user_input tool. Each question of a request becomes a message in
// the lane that owns the thread, with one button per option; a question
// that takes free text (isOther, or no options) is answered by replying to
// its message, or by the next plain message of someone who may answer.
// When every question is answered the answers go back to codex and each
// message is edited to show its answer. Like approvals, only the lane's
// own members decide, in a shared room only the requester or an admin
// (codex.approvers); unanswered after codex.question_timeout the request
// is given up and the lane told; /stop and /reset give it up too. Secret
// questions are asked only in private chats and the API lane.

// questionPrefix starts the Button.ID of answer buttons:
// "question:<id>:<question index>:<option index>".
const questionPrefix = "question:"

type pendingQuestion struct {
	info     chat.PendingQuestion
	addr     chat.Address
	answers  map[string][]string // question id → answer; guarded by questionBook.mu
	by       map[string]string   // question id → who answered
	skipped  map[string]bool     // secret questions not asked in this place
	msgIDs   []string            // question index → the message asking it ("" unsent)
	complete chan map[string][]string
}

// open reports whether question i still waits for an answer.
func (p *pendingQuestion) open(i int) bool {
	id := p.info.Questions[i].ID
	return p.answers[id] == nil && !p.skipped[id]
}

func (p *pendingQuestion) allAnswered() bool {
	for i := range p.info.Questions {
		if p.open(i) {
			return false
		}
	}
	return true
}

// snapshot is the request as adapters see it; the caller holds the lock.
func (p *pendingQuestion) snapshot() chat.PendingQuestion {
	info := p.info
	info.Answered = nil
	for _, q := range p.info.Questions {
		if p.answers[q.ID] != nil {
			info.Answered = append(info.Answered, q.ID)
		}
	}
	return info
}

// questionBook holds the pending requests; the zero value is ready.
type questionBook struct {
	mu      sync.Mutex
	seq     int64
	pending map[string]*pendingQuestion
}

func (b *questionBook) add(info chat.PendingQuestion, addr chat.Address, skipped map[string]bool) *pendingQuestion {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = make(map[string]*pendingQuestion)
	}
	b.seq++
	info.ID = "q" + strconv.FormatInt(b.seq, 10)
	p := &pendingQuestion{info: info, addr: addr, answers: make(map[string][]string), by: make(map[string]string),
		skipped: skipped, msgIDs: make([]string, len(info.Questions)), complete: make(chan map[string][]string, 1)}
	b.pending[info.ID] = p
	return p
}

// take removes the request; only the caller that took it completes it.
func (b *questionBook) take(id string) *pendingQuestion {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending[id]
	delete(b.pending, id)
	return p
}

func (b *questionBook) setMessage(p *pendingQuestion, i int, msgID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p.msgIDs[i] = msgID
}

// lane lists a lane's pending requests, oldest first.
func (b *questionBook) lane(key string) []*pendingQuestion {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ext.OfLane(b.pending, key, func(p *pendingQuestion) (string, string) { return p.info.SessionKey, p.info.ID })
}

// answered is what one accepted answer changed.
type answered struct {
	p        *pendingQuestion
	indexes  []int               // the questions it answered
	complete map[string][]string // every answer, when it was the last; the request left the book
}

// answer records answers (question id → answer) to request id for the
// lane key, from sender. It refuses the whole set when any part is wrong,
// so a request is never half-answered by a mistake.
func (b *questionBook) answer(key, id string, answers map[string][]string, by string, allowed func(*pendingQuestion) error) (answered, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending[id]
	switch {
	case p == nil:
		return answered{}, ext.ErrQuestionNotFound
	case p.info.SessionKey != key:
		return answered{}, ext.ErrQuestionWrongLane
	case len(answers) == 0:
		return answered{}, fmt.Errorf("%w: no answers given", ext.ErrBadAnswer)
	}
	if err := allowed(p); err != nil {
		return answered{}, err
	}
	var idx []int
	for qid, a := range answers {
		i := p.index(qid)
		if i < 0 {
			return answered{}, fmt.Errorf("%w: request %s has no question %q", ext.ErrBadAnswer, id, qid)
		}
		if !p.open(i) {
			return answered{}, fmt.Errorf("%w: %q", ext.ErrQuestionAnswered, qid)
		}
		if err := validAnswer(p.info.Questions[i], a); err != nil {
			return answered{}, err
		}
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		qid := p.info.Questions[i].ID
		p.answers[qid] = trimmed(answers[qid])
		p.by[qid] = by
	}
	out := answered{p: p, indexes: idx}
	if p.allAnswered() {
		delete(b.pending, id)
		out.complete = p.answers
	}
	return out, nil
}

func (p *pendingQuestion) index(qid string) int {
	for i, q := range p.info.Questions {
		if q.ID == qid {
			return i
		}
	}
	return -1
}

// validAnswer checks an answer: some text, and for a question that offers
// only options, one of their labels.
func validAnswer(q codex.Question, a []string) error {
	a = trimmed(a)
	if len(a) == 0 {
		return fmt.Errorf("%w: empty answer to %q", ext.ErrBadAnswer, q.ID)
	}
	if q.IsOther || len(q.Options) == 0 {
		return nil
	}
	for _, s := range a {
		if optionIndex(q, s) < 0 {
			return fmt.Errorf("%w: %q is not one of the options of %q (%s)", ext.ErrBadAnswer, s, q.ID, optionLabels(q))
		}
	}
	return nil
}

func trimmed(a []string) []string {
	out := make([]string, 0, len(a))
	for _, s := range a {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// optionIndex is the option whose label s is, or whose number (1-based)
// it is; -1 when none.
func optionIndex(q codex.Question, s string) int {
	s = strings.TrimSpace(s)
	for i, o := range q.Options {
		if strings.EqualFold(o.Label, s) {
			return i
		}
	}
	if n, err := strconv.Atoi(strings.TrimSuffix(s, ".")); err == nil && n >= 1 && n <= len(q.Options) {
		return n - 1
	}
	return -1
}

func optionLabels(q codex.Question) string {
	labels := make([]string, len(q.Options))
	for i, o := range q.Options {
		labels[i] = o.Label
	}
	return strings.Join(labels, ", ")
}

// questions is the feature: it owns the book, asks the lane owning a
// request's thread, and takes the answers from buttons, replies, plain
// messages and adapters (AnswerQuestion).
type questions struct {
	timeout time.Duration // codex.question_timeout
	book    questionBook
	h       ext.Host
	log     *zap.Logger
}

// New is the questions feature.
func New() ext.Feature { return &questions{} }

func (q *questions) Name() string { return "questions" }

// Register adds the answer buttons, takes Codex's questions and the
// messages that answer them, and gives up a lane's requests when its
// turn is stopped or its conversation reset.
func (q *questions) Register(h ext.Host) error {
	q.timeout = h.RequestSettings().QuestionTimeout
	q.h, q.log = h, h.Logger()
	h.Callback(questionPrefix, q.pressed)
	h.OnStopped(func(key string) { q.giveUp(key, "The turn was stopped before an answer.") })
	h.OnAnswer(q.claim)
	h.HandleQuestions(q)
	return nil
}

// PendingQuestions lists the lane's requests waiting for answers.
func (q *questions) PendingQuestions(sessionKey string) []chat.PendingQuestion {
	var out []chat.PendingQuestion
	for _, p := range q.book.lane(sessionKey) {
		q.book.mu.Lock()
		out = append(out, p.snapshot())
		q.book.mu.Unlock()
	}
	return out
}

// AnswerQuestion answers questions of the lane's pending request id.
func (q *questions) AnswerQuestion(sessionKey, id string, answers map[string][]string, senderID string) error {
	_, err := q.accept(q.h.Context(), sessionKey, id, answers, senderID, senderID, false)
	return err
}

// claim is the answer a plain message gives, if it answers a question:
// recorded without its text when the question is secret.
func (q *questions) claim(in chat.Inbound) (ext.Answer, bool) {
	id, qid, ok := q.textTarget(in)
	if !ok {
		return ext.Answer{}, false
	}
	stored := in.Text
	if q.isSecretAnswer(id, qid) {
		stored = "(secret answer to question " + id + ")"
	}
	return ext.Answer{Stored: stored, Apply: func(ctx context.Context) bool { return q.answerText(ctx, in, id, qid) }}, true
}

// AskUser shows the request's questions in the lane owning its thread and
// waits for every answer, the timeout or ctx (codex withdrew it).
func (q *questions) AskUser(ctx context.Context, req codex.UserInputRequest) (map[string][]string, bool) {
	l, ok := q.h.LaneOfThread(req.ThreadID)
	if !ok || len(req.Questions) == 0 {
		q.log.Warn("question.unrouted", zap.String("thread", req.ThreadID), zap.Int("questions", len(req.Questions)))
		return nil, false
	}
	addr := l.Address()
	key := addr.SessionKey()
	info := chat.PendingQuestion{SessionKey: key, ThreadID: req.ThreadID, TurnID: req.TurnID, ItemID: req.ItemID,
		Questions: req.Questions, Asked: q.h.Now()}
	info.Requester, info.RequesterName = q.h.TurnRequester(addr, req.ThreadID)
	skipped := make(map[string]bool)
	if ext.GroupPlace(addr.Kind) {
		for _, question := range req.Questions {
			if question.IsSecret {
				skipped[question.ID] = true
			}
		}
	}
	p := q.book.add(info, addr, skipped)
	id := p.info.ID
	q.log.Info("question.asked", zap.String("lane", key), zap.String("question", id), zap.Int("questions", len(req.Questions)))
	if len(skipped) > 0 {
		q.h.Notify(q.h.Context(), addr, "", fmt.Sprintf("Codex asked a secret question (%s), which is answered only in a private chat "+
			"or through the API; it goes unanswered here.", secretHeaders(req.Questions, skipped)))
	}
	if p.allAnswered() { // every question was secret
		q.book.take(id)
		return map[string][]string{}, true
	}
	q.show(ctx, p)
	timer := time.NewTimer(q.timeout)
	defer timer.Stop()
	select {
	case answers := <-p.complete:
		return answers, true
	case <-timer.C:
		return q.end(p, fmt.Sprintf("No answer to question %s within %s: Codex goes on without it.", id, q.timeout), "⌛ Not answered in time.")
	case <-ctx.Done():
		return q.end(p, fmt.Sprintf("Question %s was withdrawn: the turn ended before an answer.", id), "Withdrawn: the turn ended.")
	}
}

// end gives up a request that timed out or was withdrawn: the lane is
// told once, the open questions' messages say so, and codex gets the
// answers given so far.
func (q *questions) end(p *pendingQuestion, notice, mark string) (map[string][]string, bool) {
	if q.book.take(p.info.ID) == nil { // answered just now
		return <-p.complete, true
	}
	q.log.Info("question.ended", zap.String("lane", p.info.SessionKey), zap.String("question", p.info.ID), zap.String("why", mark))
	q.h.Notify(q.h.Context(), p.addr, "", notice)
	q.markOpen(p, mark)
	return q.given(p), false
}

// given copies the answers given so far.
func (q *questions) given(p *pendingQuestion) map[string][]string {
	q.book.mu.Lock()
	defer q.book.mu.Unlock()
	out := make(map[string][]string, len(p.answers))
	for k, v := range p.answers {
		out[k] = v
	}
	return out
}

// giveUp ends the lane's pending requests (/stop, /reset).
func (q *questions) giveUp(key, mark string) {
	for _, p := range q.book.lane(key) {
		if q.book.take(p.info.ID) != nil {
			q.markOpen(p, mark)
			p.complete <- q.given(p)
			q.log.Info("question.cancelled", zap.String("lane", key), zap.String("question", p.info.ID))
		}
	}
}

// show sends one message per question, with buttons where the platform
// has them. Sent directly, like an approval's question: it is only worth
// showing while the request waits. The first wait of a turn pings its
// requester in a shared room.
func (q *questions) show(ctx context.Context, p *pendingQuestion) {
	ping, replyTo := "", ""
	if ext.GroupPlace(p.addr.Kind) {
		if user, msg, ok := q.h.WaitPing(p.info.ThreadID); ok {
			ping, replyTo = user, msg
		}
	}
	for i, question := range p.info.Questions {
		if p.skipped[question.ID] {
			continue
		}
		text := questionText(p.info, i, q.timeout)
		q.book.mu.Lock()
		prompt := &chat.QuestionPrompt{Pending: p.snapshot(), Index: i}
		q.book.mu.Unlock()
		out := ext.Prompt{Address: p.addr, Text: text, Question: prompt, Ping: ping, ReplyTo: replyTo,
			Buttons: answerButtons(p.info.ID, i, question)}
		ping, replyTo = "", "" // once
		// Deferred or refused, the outbox keeps the text (and GET
		// .../questions lists the request); only a direct send can be
		// replied to and edited.
		if msgID := q.h.Ask(ctx, out); msgID != "" {
			q.book.setMessage(p, i, msgID)
		}
	}
}

// questionText is the message asking question i of a request.
func questionText(info chat.PendingQuestion, i int, timeout time.Duration) string {
	question := info.Questions[i]
	var b strings.Builder
	b.WriteString("❓ ")
	if question.Header != "" {
		b.WriteString(question.Header)
		b.WriteString(": ")
	}
	b.WriteString(question.Question)
	if len(info.Questions) > 1 {
		fmt.Fprintf(&b, " (question %s, %d of %d)", info.ID, i+1, len(info.Questions))
	} else {
		fmt.Fprintf(&b, " (question %s)", info.ID)
	}
	b.WriteByte('\n')
	for n, o := range question.Options {
		fmt.Fprintf(&b, "%d. %s", n+1, o.Label)
		if o.Description != "" {
			b.WriteString(" — ")
			b.WriteString(o.Description)
		}
		b.WriteByte('\n')
	}
	switch {
	case len(question.Options) == 0:
		b.WriteString("Reply to this message with your answer.")
	case question.IsOther:
		b.WriteString("Choose an option, or reply to this message with another answer.")
	default:
		b.WriteString("Choose an option, or reply with its number.")
	}
	if info.RequesterName != "" {
		fmt.Fprintf(&b, " For %s (or an admin) to answer.", info.RequesterName)
	}
	fmt.Fprintf(&b, " Without an answer Codex goes on in %s.", timeout)
	return b.String()
}

// maxButtonLabel keeps labels within every platform's limit (Discord:
// 80 characters).
const maxButtonLabel = 80

func answerButtons(id string, i int, question codex.Question) []chat.Button {
	buttons := make([]chat.Button, 0, len(question.Options))
	for n, o := range question.Options {
		buttons = append(buttons, chat.Button{ID: questionPrefix + id + ":" + strconv.Itoa(i) + ":" + strconv.Itoa(n),
			Label: cutRunes(o.Label, maxButtonLabel)})
	}
	return buttons
}

func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func secretHeaders(qs []codex.Question, skipped map[string]bool) string {
	var names []string
	for _, question := range qs {
		if skipped[question.ID] {
			name := question.Header
			if name == "" {
				name = question.ID
			}
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// pressed handles an answer button: "question:<id>:<index>:<option>".
func (q *questions) pressed(ctx context.Context, in chat.Inbound) {
	parts := strings.Split(strings.TrimPrefix(in.Callback, questionPrefix), ":")
	if len(parts) != 3 {
		q.log.Info("inbound.callback_unknown", zap.String("platform", in.Address.Platform), zap.String("callback", in.Callback))
		return
	}
	id := parts[0]
	i, err1 := strconv.Atoi(parts[1])
	n, err2 := strconv.Atoi(parts[2])
	label, qid, ok := q.option(id, i, n)
	if err1 != nil || err2 != nil || !ok {
		q.h.Notify(ctx, in.Address, "", fmt.Sprintf("Question %s is no longer waiting (answered, expired or withdrawn).", id))
		return
	}
	q.acceptAndSay(ctx, in, id, map[string][]string{qid: {label}})
}

// option is the label of option n of question i of request id.
func (q *questions) option(id string, i, n int) (label, qid string, ok bool) {
	q.book.mu.Lock()
	defer q.book.mu.Unlock()
	p := q.book.pending[id]
	if p == nil || i < 0 || i >= len(p.info.Questions) || n < 0 || n >= len(p.info.Questions[i].Options) {
		return "", "", false
	}
	return p.info.Questions[i].Options[n].Label, p.info.Questions[i].ID, true
}

// acceptAndSay applies answers from a chat and tells the lane when they
// were refused, reporting whether it did; an accepted answer shows in its
// question's message.
func (q *questions) acceptAndSay(ctx context.Context, in chat.Inbound, id string, answers map[string][]string) (refused bool) {
	_, err := q.accept(ctx, in.Address.SessionKey(), id, answers, in.SenderID, ext.SpeakerName(in), in.SenderAdmin)
	if err != nil {
		q.h.Notify(ctx, in.Address, in.MessageID, refusedAnswerText(id, err))
		return true
	}
	return false
}

func refusedAnswerText(id string, err error) string {
	switch {
	case errors.Is(err, ext.ErrQuestionNotFound):
		return fmt.Sprintf("Question %s is no longer waiting (answered, expired or withdrawn).", id)
	case errors.Is(err, ext.ErrQuestionWrongLane):
		return fmt.Sprintf("Question %s belongs to another conversation; refused.", id)
	case errors.Is(err, ext.ErrQuestionAnswered):
		return fmt.Sprintf("Question %s is already answered.", id)
	case errors.Is(err, ext.ErrNotApprover):
		return err.Error() + "; question " + id + " is still waiting."
	}
	return strings.TrimPrefix(err.Error(), "gateway: ")
}

// accept records answers; the last one hands them all to codex. Each
// answered question's message is edited to show its answer.
func (q *questions) accept(ctx context.Context, key, id string, answers map[string][]string,
	sender, senderName string, platformAdmin bool) (answered, error) {
	res, err := q.book.answer(key, id, answers, senderName, func(p *pendingQuestion) error {
		if !q.h.MayDecide(p.addr.Platform, p.info.Requester, sender, platformAdmin) {
			return ext.Refusal(p.info.Requester, p.info.RequesterName)
		}
		return nil
	})
	if err != nil {
		q.log.Info("question.refused", zap.String("lane", key), zap.String("question", id), zap.String("sender", sender), zap.Error(err))
		return res, err
	}
	q.log.Info("question.answered", zap.String("lane", key), zap.String("question", id), zap.Ints("questions", res.indexes),
		zap.Bool("complete", res.complete != nil), zap.String("sender", sender))
	for _, i := range res.indexes {
		q.markAnswered(ctx, res.p, i)
	}
	if res.complete != nil {
		res.p.complete <- res.complete
	}
	return res, nil
}

// markAnswered edits question i's message to show its answer, without
// buttons; a secret answer is not repeated.
func (q *questions) markAnswered(ctx context.Context, p *pendingQuestion, i int) {
	q.book.mu.Lock()
	question := p.info.Questions[i]
	answer, by, msgID := strings.Join(p.answers[question.ID], ", "), p.by[question.ID], p.msgIDs[i]
	q.book.mu.Unlock()
	if question.IsSecret {
		answer = "(secret answer received)"
	}
	mark := "✅ " + answer
	if by != "" {
		mark += " — " + by
	}
	q.edit(ctx, p, i, msgID, mark)
}

// markOpen edits the messages of the questions still open.
func (q *questions) markOpen(p *pendingQuestion, mark string) {
	q.book.mu.Lock()
	var open []int
	var ids []string
	for i := range p.info.Questions {
		if p.open(i) && p.msgIDs[i] != "" {
			open, ids = append(open, i), append(ids, p.msgIDs[i])
		}
	}
	q.book.mu.Unlock()
	for n, i := range open {
		q.edit(q.h.Context(), p, i, ids[n], mark)
	}
}

// edit replaces question i's message with its question and mark, and
// takes its buttons away where the platform can.
func (q *questions) edit(ctx context.Context, p *pendingQuestion, i int, msgID, mark string) {
	if msgID == "" {
		return
	}
	question := p.info.Questions[i]
	text := "❓ " + question.Question + "\n" + mark
	if question.Header != "" {
		text = "❓ " + question.Header + ": " + question.Question + "\n" + mark
	}
	if err := q.h.EditPrompt(ctx, p.addr, msgID, text); err != nil {
		q.log.Info("question.edit_failed", zap.String("lane", p.info.SessionKey), zap.String("question", p.info.ID), zap.Error(err))
	}
}

// textTarget finds the question a text message answers: the one whose
// message it replies to, else, from someone who may answer, the lane's
// oldest open question that takes text or has an option the text names.
// The core never offers a command as an answer.
func (q *questions) textTarget(in chat.Inbound) (id, qid string, ok bool) {
	if in.Text == "" || len(in.Attachments) > 0 || in.Ambient {
		return "", "", false
	}
	pending := q.book.lane(in.Address.SessionKey())
	q.book.mu.Lock()
	defer q.book.mu.Unlock()
	if in.ReplyTo != "" {
		for _, p := range pending {
			for i, m := range p.msgIDs {
				if m == in.ReplyTo {
					return p.info.ID, p.info.Questions[i].ID, true
				}
			}
		}
	}
	for _, p := range pending {
		if !q.h.MayDecide(p.addr.Platform, p.info.Requester, in.SenderID, in.SenderAdmin) {
			continue
		}
		for i, question := range p.info.Questions {
			if !p.open(i) {
				continue
			}
			if question.IsOther || len(question.Options) == 0 || optionIndex(question, in.Text) >= 0 {
				return p.info.ID, question.ID, true
			}
		}
	}
	return "", "", false
}

// answerText answers question qid of request id with a message's text:
// an option's number or label picks that option. It reports whether it
// replied to the message (the answer was refused).
func (q *questions) answerText(ctx context.Context, in chat.Inbound, id, qid string) bool {
	text := strings.TrimSpace(in.Text)
	q.book.mu.Lock()
	if p := q.book.pending[id]; p != nil {
		if i := p.index(qid); i >= 0 {
			if n := optionIndex(p.info.Questions[i], text); n >= 0 {
				text = p.info.Questions[i].Options[n].Label
			}
		}
	}
	q.book.mu.Unlock()
	return q.acceptAndSay(ctx, in, id, map[string][]string{qid: {text}})
}

// isSecretAnswer reports whether question qid of request id is secret:
// its answer is not kept in the inbound row.
func (q *questions) isSecretAnswer(id, qid string) bool {
	q.book.mu.Lock()
	defer q.book.mu.Unlock()
	if p := q.book.pending[id]; p != nil {
		if i := p.index(qid); i >= 0 {
			return p.info.Questions[i].IsSecret
		}
	}
	return false
}
