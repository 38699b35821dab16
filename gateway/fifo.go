package gateway

// fifo is a lane's queue of waiting work, oldest first. It is guarded by
// lane.mu; its zero value is an empty queue holding no memory, which is
// what thousands of idle lanes cost.
type fifo struct{ items []item }

func (q *fifo) len() int { return len(q.items) }

func (q *fifo) push(it item) { q.items = append(q.items, it) }

// pop removes and returns the oldest item.
func (q *fifo) pop() (item, bool) {
	if len(q.items) == 0 {
		return item{}, false
	}
	it := q.items[0]
	q.items[0] = item{} // drop the reference: the text may be large
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil // let the backing array go
	}
	return it, true
}

// takeAll empties the queue and returns what it held.
func (q *fifo) takeAll() []item {
	taken := q.items
	q.items = nil
	return taken
}

// prepend puts items back at the head, in their order.
func (q *fifo) prepend(items []item) {
	q.items = append(append([]item(nil), items...), q.items...)
}

// has reports whether any waiting item matches.
// update applies fn to the first item match accepts and reports whether
// one did.
func (q *fifo) update(match func(item) bool, fn func(*item)) bool {
	for i := range q.items {
		if match(q.items[i]) {
			fn(&q.items[i])
			return true
		}
	}
	return false
}

func (q *fifo) has(match func(item) bool) bool {
	for _, it := range q.items {
		if match(it) {
			return true
		}
	}
	return false
}
