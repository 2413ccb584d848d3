package directory

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// BenchmarkHeapPerByte measures the Go heap a directory on pebble keeps
// per byte of the learned records it holds: "pad" are TDs of about 60 KB
// whose description is one long run of a letter (the spam of
// scripts/attack.sh, issue 24's sybil run), "words" TDs of about 60 KB of
// distinct words, "small" the golden TD (about 3 KB). Records are parsed
// from their bytes, as gossip and sync deliver them, and the caller keeps
// none of them. The figure (heapB/B) is what issue 24 bounds to 2; it is
// measured once, outside the timed loop.
func BenchmarkHeapPerByte(b *testing.B) {
	for _, shape := range []struct {
		name string
		n    int
		desc func(i int) string
	}{
		{"pad60KB", 1000, func(int) string { return strings.Repeat("s", 60_000) }},
		{"words60KB", 1000, func(i int) string { return wordsText(i, 60_000) }},
		{"small", 10_000, func(i int) string { return fmt.Sprintf("A small Thing number %d.", i) }},
	} {
		b.Run(shape.name, func(b *testing.B) {
			ds := pebbleStore(b, b.TempDir())
			b.Cleanup(func() { ds.Close() })
			self := newPublisher(b, 1)
			pubs := []publisher{newPublisher(b, 2), newPublisher(b, 3), newPublisher(b, 4), newPublisher(b, 5)}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			d, err := Open(Deps{Datastore: ds, Self: self.id}, Config{})
			if err != nil {
				b.Fatal(err)
			}
			var held int64
			for i := 0; i < shape.n; i += 100 {
				recs := make([]*lmosproto.Record, 0, 100)
				for k := i; k < min(i+100, shape.n); k++ {
					rec := parsedRecord(b, pubs[k%len(pubs)], thingSpec{id: fmt.Sprintf("urn:heap:%d", k), description: shape.desc(k), seq: 1})
					held += int64(len(rec.Raw))
					recs = append(recs, rec)
				}
				if _, err := d.PutMany(recs); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(d)
			d.Close()
			for b.Loop() {
			}
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(held), "heapB/B")
			b.ReportMetric(float64(held)/float64(shape.n), "B/record")
		})
	}
}

// wordsText is about n bytes of words that differ from one i to another.
func wordsText(i, n int) string {
	var sb strings.Builder
	for k := 0; sb.Len() < n; k++ {
		fmt.Fprintf(&sb, "w%dx%d ", i, k)
	}
	return sb.String()
}

// parsedRecord is the record of s by p as a node receives it: its TD
// parsed from the signed bytes (no parsed value shared with the caller).
func parsedRecord(tb testing.TB, p publisher, s thingSpec) *lmosproto.Record {
	tb.Helper()
	rec := p.unsigned(tb, s.td(tb), t0)
	td, err := lmosproto.ParseTD(rec.Raw)
	if err != nil {
		tb.Fatal(err)
	}
	raw := append([]byte(nil), rec.Raw...)
	return &lmosproto.Record{Raw: raw, TD: td, ThingID: td.ID, Seq: td.Seq, Signer: rec.Signer}
}
