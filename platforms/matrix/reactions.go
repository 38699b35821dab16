package matrix

import (
	"context"
	"encoding/json"
	"strings"

	"go.uber.org/zap"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
)

// Matrix has no buttons: a message offering choices lists them, the bot
// seeds one reaction per choice, and a user's reaction (or a typed
// !approve / !deny / number) answers. The emoji → button id map travels in
// the message's own content, so it is understood after a restart. Who may
// answer is the gateway's decision, as for a button press elsewhere.

// choicesKey is the content field holding the emoji → button id map.
const choicesKey = "io.gatewayd.choices"

// choiceSet is what a message of ours offers: its lane and its keys.
type choiceSet struct {
	addr gateway.Address
	keys map[string]string // emoji (without variation selector) → button id
}

var decisionKeys = map[string]string{"accept": "✅", "acceptForSession": "🔁", "decline": "❌", "cancel": "⏹️"}

var numberKeys = []string{"1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣", "🔟"}

// assignKeys gives each button an emoji: an approval's by its decision
// (the id's last ":"-field), anything else a number (past ten there is
// none; the typed number still works).
func assignKeys(buttons []gateway.Button) (keys []string, m map[string]string) {
	m = map[string]string{}
	n := 0
	for _, b := range buttons {
		k := ""
		if i := strings.LastIndexByte(b.ID, ':'); i >= 0 && strings.HasPrefix(b.ID, "approval:") {
			k = decisionKeys[b.ID[i+1:]]
		}
		if k == "" && n < len(numberKeys) {
			k = numberKeys[n]
			n++
		}
		keys = append(keys, k)
		if k != "" {
			m[normKey(k)] = b.ID
		}
	}
	return keys, m
}

// normKey drops emoji variation selectors: clients differ in sending them.
func normKey(k string) string { return strings.ReplaceAll(k, "\ufe0f", "") }

// choicesText lists the choices under the text.
func choicesText(text string, buttons []gateway.Button, keys []string) string {
	var b strings.Builder
	b.WriteString(text)
	b.WriteString("\n\n")
	for i, btn := range buttons {
		if i > 0 {
			b.WriteString(" · ")
		}
		if keys[i] != "" {
			b.WriteString(keys[i] + " ")
		}
		b.WriteString(btn.Label)
	}
	b.WriteString("\n\nReact, or type !approve / !deny / the option's number.")
	return b.String()
}

// SendButtons implements gateway.ButtonSender with reactions.
func (a *Adapter) SendButtons(ctx context.Context, out gateway.Outbound, buttons []gateway.Button) (string, error) {
	keys, m := assignKeys(buttons)
	out.Text = choicesText(out.Text, buttons, keys)
	eid, err := a.send(ctx, out, m)
	if err != nil {
		return "", err
	}
	a.choices.put(eid, choiceSet{addr: out.Address, keys: m})
	a.seed(ctx, out, eid, keys)
	return eid, nil
}

// seed adds the bot's own reaction per choice so people can click them.
// Best effort, skipped while the room is rate limited: people can react
// with the emoji themselves.
func (a *Adapter) seed(ctx context.Context, out gateway.Outbound, msgID string, keys []string) {
	room, _, err := target(out.Address)
	if err != nil {
		return
	}
	for _, k := range keys {
		if _, cooling := a.cooldown(); cooling || k == "" {
			continue
		}
		c := &event.ReactionEventContent{RelatesTo: event.RelatesTo{Type: event.RelAnnotation, EventID: id.EventID(msgID), Key: k}}
		if _, err := a.post(ctx, room, event.EventReaction, c, a.sendTxn(out.ID, 0, "react:"+k, msgID)); err != nil {
			a.log.Info("matrix: could not seed a choice's reaction", zap.Error(err))
		}
	}
}

// EditButtons implements gateway.ButtonEditor: the message is edited to
// its new text; without buttons it offers nothing any more, so later
// reactions map to nothing.
func (a *Adapter) EditButtons(ctx context.Context, addr gateway.Address, messageID, text string, buttons []gateway.Button) error {
	room, _, err := target(addr)
	if err != nil {
		return err
	}
	var m map[string]string
	var keys []string
	if len(buttons) > 0 {
		keys, m = assignKeys(buttons)
		text = choicesText(text, buttons, keys)
	}
	c := textContent(previewPart(text), "", false, "")
	txn := a.editTxns.txn(id.EventID(messageID), c.Body+"\x00"+strings.Join(keys, ","))
	if err := a.edit(ctx, room, id.EventID(messageID), c, m, txn); err != nil {
		return err
	}
	if m == nil {
		a.choices.put(messageID, choiceSet{addr: addr}) // decided: reactions map to nothing
		return nil
	}
	a.choices.put(messageID, choiceSet{addr: addr, keys: m})
	a.seed(ctx, gateway.Outbound{Address: addr}, messageID, keys)
	return nil
}

// offersChoices: a message in lane addr offers numbered options (a
// question), so a bare number said there answers it.
func (a *Adapter) offersChoices(addr gateway.Address) bool {
	a.choices.mu.Lock()
	defer a.choices.mu.Unlock()
	for _, cs := range a.choices.m {
		if cs.addr == addr && cs.keys[normKey(numberKeys[0])] != "" {
			return true
		}
	}
	return false
}

// handleReaction delivers a reaction on a choice of ours as the press of
// that choice's button.
func (a *Adapter) handleReaction(ctx context.Context, sink gateway.Sink, e *event.Event) error {
	if !parsed(e, event.EventReaction) || !a.allowed(e) {
		return nil
	}
	if _, done := a.reactions.get(string(e.ID)); done {
		return nil // a batch fetched again: the press was delivered once
	}
	rel := e.Content.AsReaction().RelatesTo
	if rel.Type != event.RelAnnotation {
		return nil
	}
	cs, ok := a.choices.get(string(rel.EventID))
	if !ok {
		var err error
		if cs, ok, err = a.choicesOf(ctx, e.RoomID, rel.EventID); err != nil || !ok {
			return err
		}
	}
	button := cs.keys[normKey(rel.Key)]
	if button == "" {
		return nil
	}
	in := gateway.Inbound{Address: cs.addr, MessageID: string(e.ID), SenderID: string(e.Sender),
		SenderName: localpart(e.Sender), Callback: button, ReceivedAt: a.cfg.Now()}
	if _, err := sink.Deliver(ctx, in); err != nil {
		return err
	}
	a.reactions.put(string(e.ID), true)
	return nil
}

// choicesOf reads the choices from the message itself (after a restart);
// only the bot's own messages are trusted for the map.
func (a *Adapter) choicesOf(ctx context.Context, room id.RoomID, evID id.EventID) (choiceSet, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	ev, err := a.cli.GetEvent(rctx, room, evID)
	if err != nil {
		if err = mapError("event", err); isPermanent(err) {
			return choiceSet{}, false, nil
		}
		return choiceSet{}, false, err
	}
	if ev.Sender != a.self() || !parsed(ev, event.EventMessage) {
		return choiceSet{}, false, nil
	}
	var raw map[string]string
	if b, err := json.Marshal(ev.Content.Raw[choicesKey]); err != nil || json.Unmarshal(b, &raw) != nil || len(raw) == 0 {
		return choiceSet{}, false, nil
	}
	addr, ok := a.laneOf(room, ev.Content.AsMessage().RelatesTo)
	cs := choiceSet{addr: addr, keys: map[string]string{}}
	for k, v := range raw {
		cs.keys[normKey(k)] = v
	}
	a.choices.put(string(evID), cs)
	return cs, ok, nil
}
