package fifo

import (
	"fmt"
	"testing"
)

type job struct {
	text  string
	retry bool
}

func TestQueueKeepsOrderThroughTakeAndPrepend(t *testing.T) {
	var q Queue[job]
	for i := range 3 {
		q.Push(job{text: fmt.Sprint(i)})
	}
	first, _ := q.Pop()
	taken := q.TakeAll()
	q.Push(job{text: "later"})
	q.Prepend(taken)
	var got []string
	for {
		it, ok := q.Pop()
		if !ok {
			break
		}
		got = append(got, it.text)
	}
	if first.text != "0" || fmt.Sprint(got) != "[1 2 later]" {
		t.Errorf("popped %q then %v, want 0 then [1 2 later]", first.text, got)
	}
	if q.items != nil {
		t.Error("an emptied queue still holds its backing array")
	}
	q.Push(job{retry: true})
	if !q.Has(func(it job) bool { return it.retry }) || q.Has(func(it job) bool { return it.text != "" }) {
		t.Error("Has does not report the waiting items")
	}
}

func TestQueueUpdatesTheFirstMatch(t *testing.T) {
	var q Queue[job]
	q.Push(job{text: "a"})
	q.Push(job{text: "b", retry: true})
	q.Push(job{text: "c", retry: true})
	isRetry := func(it job) bool { return it.retry }
	if !q.Update(isRetry, func(it *job) { it.text = "B" }) {
		t.Fatal("Update found no match")
	}
	if q.Update(func(it job) bool { return it.text == "z" }, func(*job) { t.Error("fn ran without a match") }) {
		t.Error("Update reported a match that is not there")
	}
	if got := fmt.Sprint(q.TakeAll()); got != "[{a false} {B true} {c true}]" {
		t.Errorf("queue after Update = %s", got)
	}
	if q.Len() != 0 {
		t.Errorf("Len after TakeAll = %d, want 0", q.Len())
	}
}
