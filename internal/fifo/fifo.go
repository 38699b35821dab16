// Package fifo is a first-in first-out queue whose zero value is empty and
// holds no memory: a gateway lane keeps its waiting work in one, and
// thousands of idle lanes must cost nothing. It is not safe for concurrent
// use; its owner guards it.
package fifo

// Queue holds items oldest first.
type Queue[T any] struct{ items []T }

// Len is the number of items waiting.
func (q *Queue[T]) Len() int { return len(q.items) }

// Push adds it at the tail.
func (q *Queue[T]) Push(it T) { q.items = append(q.items, it) }

// Pop removes and returns the oldest item.
func (q *Queue[T]) Pop() (T, bool) {
	var zero T
	if len(q.items) == 0 {
		return zero, false
	}
	it := q.items[0]
	q.items[0] = zero // drop the reference: an item may hold much
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil // let the backing array go
	}
	return it, true
}

// TakeAll empties the queue and returns what it held.
func (q *Queue[T]) TakeAll() []T {
	taken := q.items
	q.items = nil
	return taken
}

// Prepend puts items back at the head, in their order.
func (q *Queue[T]) Prepend(items []T) {
	q.items = append(append([]T(nil), items...), q.items...)
}

// Update applies fn to the first item match accepts and reports whether
// one did.
func (q *Queue[T]) Update(match func(T) bool, fn func(*T)) bool {
	for i := range q.items {
		if match(q.items[i]) {
			fn(&q.items[i])
			return true
		}
	}
	return false
}

// Has reports whether any waiting item matches.
func (q *Queue[T]) Has(match func(T) bool) bool {
	for _, it := range q.items {
		if match(it) {
			return true
		}
	}
	return false
}
