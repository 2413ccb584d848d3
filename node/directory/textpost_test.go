package directory

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTextList: a compressed term list holds what a plain map of slot to
// tf holds, in slot order, through inserts at the end and in the middle
// (slots reused), removals, chunk splits, and gaps and tfs wider than
// their chunk's widths (the chunk packed again).
func TestTextList(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, span := range []uint32{40, 1000, 1 << 20, 1 << 31} {
		var l textList
		want := map[uint32]uint8{}
		next := uint32(0) // the slots as they are handed out: mostly new, some reused
		for step := range 5000 {
			var slot uint32
			switch op := r.IntN(10); {
			case op < 5: // a new slot past every other
				next += 1 + r.Uint32N(max(span/1000, 1))
				slot = next
			case op < 7: // a slot anywhere below, reused
				slot = r.Uint32N(next + 1)
			default: // remove one held, or one that is not
				if len(want) > 0 && r.IntN(4) > 0 {
					for k := range want { // a random one: map order
						slot = k
						break
					}
				} else {
					slot = r.Uint32N(next + 2)
				}
				l.remove(slot)
				delete(want, slot)
				if step%7 == 0 {
					check(t, &l, want, step)
				}
				continue
			}
			tf := uint8(1 + r.IntN(9))
			if r.IntN(50) == 0 {
				tf = uint8(r.IntN(256))
			}
			l.insert(slot, tf)
			if _, ok := want[slot]; !ok {
				want[slot] = tf
			}
			if step%101 == 0 {
				check(t, &l, want, step)
			}
		}
		check(t, &l, want, -1)
		if len(l.chunks) < 2 {
			t.Errorf("span %d: %d chunks: the test did not split one", span, len(l.chunks))
		}
		for slot := range want {
			l.remove(slot)
		}
		if l.n != 0 || l.chunks != nil {
			t.Errorf("span %d: emptied: n %d, %d chunks", span, l.n, len(l.chunks))
		}
	}
}

func check(t *testing.T, l *textList, want map[uint32]uint8, step int) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(want))
	if l.n != len(keys) {
		t.Fatalf("step %d: n %d, want %d", step, l.n, len(keys))
	}
	i := 0
	for c := l.cursor(); c.ok; c.next() {
		if i >= len(keys) || c.cur.slot != keys[i] || c.cur.tf != want[keys[i]] {
			t.Fatalf("step %d: posting %d is %+v, want slot %d tf %d", step, i, c.cur, keys[min(i, len(keys)-1)], want[keys[min(i, len(keys)-1)]])
		}
		i++
	}
	if i != len(keys) {
		t.Fatalf("step %d: %d postings, want %d", step, i, len(keys))
	}
	if len(keys) > 0 && l.last != keys[len(keys)-1] {
		t.Fatalf("step %d: the list's last slot is %d, want %d", step, l.last, keys[len(keys)-1])
	}
	var prevLast uint32
	for j, ch := range l.chunks {
		ps := ch.decode(nil)
		if ch.n == 0 || ch.n > chunkMax || j > 0 && ch.first <= prevLast {
			t.Fatalf("step %d: chunk %d: %d postings, first %d after %d", step, j, ch.n, ch.first, prevLast)
		}
		prevLast = ps[len(ps)-1].slot
	}
}

// BenchmarkTextCursor walks a term list of 100k postings, as a free-text
// query over a common term does.
func BenchmarkTextCursor(b *testing.B) {
	var l textList
	r := rand.New(rand.NewPCG(5, 6))
	slot := uint32(0)
	for range 100_000 {
		slot += 1 + r.Uint32N(12)
		l.insert(slot, uint8(1+r.IntN(6)))
	}
	b.ResetTimer()
	for b.Loop() {
		var sum uint32
		for c := l.cursor(); c.ok; c.next() {
			sum += uint32(c.cur.tf)
		}
		if sum == 0 {
			b.Fatal("empty walk")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/posting")
}
