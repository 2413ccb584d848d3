package groups

import (
	"container/heap"
	"fmt"
	"reflect"
	"testing"
)

// The reference fold: Kahn's algorithm with a priority queue, straight from
// docs/groups.md, against which the Log's incremental order is checked.

type readyQueue []*entry

func (q readyQueue) Len() int           { return len(q) }
func (q readyQueue) Less(i, j int) bool { return before(q[i], q[j]) }
func (q readyQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)        { *q = append(*q, x.(*entry)) }
func (q *readyQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// kahnFold folds the entries of l for which in is true, and returns the
// order, the state and the effective operations.
func kahnFold(l *Log, in func(*entry) bool) ([]string, State, map[string]bool) {
	indeg := map[*entry]int{}
	q := &readyQueue{}
	for _, e := range l.entries {
		if in(e) {
			indeg[e] = len(e.parents)
			if len(e.parents) == 0 {
				heap.Push(q, e)
			}
		}
	}
	var order []string
	var st State
	eff := map[string]bool{}
	for q.Len() > 0 {
		e := heap.Pop(q).(*entry)
		order = append(order, e.op.ID)
		eff[e.op.ID] = l.apply(&st, e, in)
		for _, c := range e.children {
			if _, ok := indeg[c]; ok {
				if indeg[c]--; indeg[c] == 0 {
					heap.Push(q, c)
				}
			}
		}
	}
	return order, st, eff
}

// checkAgainstKahn compares the log with the reference fold, and the state
// of every operation's causal past with the filtered replay rule 4 uses.
func checkAgainstKahn(t *testing.T, l *Log) {
	t.Helper()
	order, st, eff := kahnFold(l, all)
	if got := opIDs(l.Ops()); !reflect.DeepEqual(got, order) {
		t.Fatalf("incremental fold order differs from Kahn's")
	}
	got := l.State()
	got.Heads, got.Ops = nil, 0
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("state differs from Kahn's:\n%+v\n%+v", got, st)
	}
	for id, want := range eff {
		if l.Effective(id) != want {
			t.Fatalf("Effective(%s) = %v, Kahn says %v", id, !want, want)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		in := func(x *entry) bool { return e.anc.has(x.idx) }
		_, want, _ := kahnFold(l, in)
		got, _ := l.replay(in, false)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("causal past of %s: replay differs from Kahn's", e.op.ID)
		}
	}
}

func TestIncrementalFoldMatchesKahn(t *testing.T) {
	base, ops, _ := concurrentScenario(t)
	l, err := NewLog(base[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range append(base[1:], ops...) {
		if _, err := l.Add(op); err != nil {
			t.Fatal(err)
		}
		checkAgainstKahn(t, l)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			checkAgainstKahn(t, randomized(t, seed, 200))
		})
	}
}
