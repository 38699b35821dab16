package gateway

import (
	"fmt"
	"testing"
)

func TestFIFOKeepsOrderThroughTakeAndPrepend(t *testing.T) {
	var q fifo
	for i := range 3 {
		q.push(item{text: fmt.Sprint(i)})
	}
	first, _ := q.pop()
	taken := q.takeAll()
	q.push(item{text: "later"})
	q.prepend(taken)
	var got []string
	for {
		it, ok := q.pop()
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
	q.push(item{retry: true})
	if !q.has(func(it item) bool { return it.retry }) || q.has(func(it item) bool { return it.text != "" }) {
		t.Error("has does not report the waiting items")
	}
}
