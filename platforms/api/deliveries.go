package api

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"
)

// Requests and the outbox rows they carry. A request registers before its
// message is delivered and leaves when its response is written (or it
// gives up); the rows it took are then reported to the gateway: delivered
// if the response was written, handed back for the lane's next request if
// not. A lane notice may ride on several requests at once: the first one
// written reports it, and it is handed back only when none was.

// reportTimeout bounds a report to the gateway (a store write).
const reportTimeout = 10 * time.Second

// register opens a request on lane waiting for message id's answer; a
// replay waits for the answer only. The lane's rows held for its next
// request are asked for again, so they ride on this one.
func (p *Platform) register(ctx context.Context, id, lane string, replay bool) *waiter {
	w := newWaiter(lane, id, replay)
	if !replay {
		w.seen = p.relayPosition(ctx, w.key)
	}
	p.mu.Lock()
	p.waiters[id] = append(p.waiters[id], w)
	held := p.deferredLanes[lane]
	delete(p.deferredLanes, lane)
	p.mu.Unlock()
	// The rows another node holds for the lane's next request are asked
	// for too: they reach this request through the relay.
	if held || (!replay && p.cfg.Relay != nil && !p.cfg.Relay.Serves(w.key)) {
		p.redeliver(ctx, lane)
	}
	return w
}

// registerPrimary is register for the request that sends message id; it
// fails while another request sending the same id has not recorded it yet.
func (p *Platform) registerPrimary(ctx context.Context, id, lane string) (*waiter, bool) {
	p.mu.Lock()
	busy := primaryOf(p.waiters[id]) != nil
	p.mu.Unlock()
	if busy {
		return nil, false
	}
	return p.register(ctx, id, lane, false), true
}

// leave ends a request: it stops taking messages, and every row it still
// carries is reported (written is the outcome of writing its response).
func (p *Platform) leave(ctx context.Context, id string, w *waiter, written error) {
	p.mu.Lock()
	p.removeLocked(id, w)
	rows := slices.Clone(w.rows)
	p.mu.Unlock()
	p.report(ctx, id, w, rows, written)
}

// removeLocked takes w off the waiters of id and off the previews.
func (p *Platform) removeLocked(id string, w *waiter) {
	if ws := slices.DeleteFunc(p.waiters[id], func(o *waiter) bool { return o == w }); len(ws) > 0 {
		p.waiters[id] = ws
	} else {
		delete(p.waiters, id)
	}
	for pid, pw := range p.previews {
		if pw == w {
			delete(p.previews, pid)
		}
	}
}

// carryLocked records that w carries outbox row id and reports whether it
// did not already (a row redelivered while a request holds it is not
// attached twice). Row 0 has nothing to report: always new.
func (p *Platform) carryLocked(w *waiter, id int64) bool {
	if id == 0 {
		return true
	}
	if slices.Contains(w.rows, id) {
		return false
	}
	w.rows = append(w.rows, id)
	p.carried[id]++
	return true
}

// report settles rows that w carried: delivered when written is nil (via
// the request of message via), otherwise handed back to the lane unless
// another open request still carries them.
func (p *Platform) report(ctx context.Context, via string, w *waiter, rows []int64, written error) {
	var delivered []int64
	lost := false
	p.mu.Lock()
	for _, id := range rows {
		i := slices.Index(w.rows, id)
		if i < 0 {
			continue // reported already
		}
		w.rows = slices.Delete(w.rows, i, i+1)
		n, ok := p.carried[id]
		switch {
		case !ok: // another request delivered it
		case written == nil:
			delete(p.carried, id)
			delivered = append(delivered, id)
		case n > 1:
			p.carried[id] = n - 1
		default:
			delete(p.carried, id)
			lost = true
		}
	}
	p.mu.Unlock()
	if len(delivered) == 0 && !lost {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	for _, id := range delivered {
		if err := p.cfg.Deliveries.Delivered(ctx, id, "api:"+via); err != nil {
			p.log.Error("api.delivered_report_failed", zap.Int64("outbox", id), zap.Error(err))
		}
	}
	if lost {
		p.log.Info("api.handed_back", zap.String("lane", w.lane), zap.String("message", via), zap.Error(written))
		p.redeliver(ctx, w.lane)
	}
}

// redeliver asks the gateway for the lane's held rows; if it cannot, the
// lane's next request asks again.
func (p *Platform) redeliver(ctx context.Context, lane string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	if err := p.cfg.Deliveries.Redeliver(ctx, laneAddress(lane).SessionKey()); err != nil {
		p.log.Error("api.redeliver_failed", zap.String("lane", lane), zap.Error(err))
		p.mu.Lock()
		p.deferredLanes[lane] = true
		p.mu.Unlock()
	}
}

// primaryOf returns the request that sent the message (not a replay).
func primaryOf(ws []*waiter) *waiter {
	for _, w := range ws {
		if !w.replay {
			return w
		}
	}
	return nil
}
