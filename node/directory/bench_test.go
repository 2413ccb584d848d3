package directory

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	datastore "github.com/ipfs/go-datastore"

	"github.com/lmosnode/lmosnode/internal/dircorpus"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The benchmarks run on synthetic federations of 10k and 100k Things
// (internal/dircorpus). Signing 100k TDs would take minutes, and Put
// trusts its caller to have verified the record, so the corpus builds
// proto.Record values directly: the TD is a value with the indexed
// fields, Raw is one real signed TD (about 3 KB) shared by every record.

// corpus generates Things deterministically.
type corpus struct{ *dircorpus.Corpus }

func newCorpus(tb testing.TB) corpus {
	tb.Helper()
	c, err := dircorpus.New()
	if err != nil {
		tb.Fatal(err)
	}
	c.Raw = newPublisher(tb, 1).sign(tb, thingSpec{id: thingID, seq: 1}, t0).Raw
	c.Created = t0
	return corpus{c}
}

// corpusDirectory is a directory in memory holding the corpus's first n
// Things, closed when t ends.
func corpusDirectory(t *testing.T, n int) (*Directory, corpus) {
	t.Helper()
	d, err := Open(Deps{Datastore: memStore(), Self: newPublisher(t, 1).id}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := newCorpus(t)
	c.fill(t, d, n)
	return d, c
}

// next returns the record of a new Thing.
func (c corpus) next() *lmosproto.Record { return c.Next() }

// fill puts n new Things in batches.
func (c corpus) fill(tb testing.TB, d *Directory, n int) {
	tb.Helper()
	const batch = 1000
	recs := make([]*lmosproto.Record, 0, batch)
	for i := 0; i < n; i += batch {
		recs = recs[:0]
		for range min(batch, n-i) {
			recs = append(recs, c.next())
		}
		if _, err := d.PutMany(recs); err != nil {
			tb.Fatal(err)
		}
	}
}

var benchSizes = []int{10_000, 100_000}

// tableSizes are the sizes BenchmarkTable runs: benchSizes, or those of
// -dirbench.sizes (e.g. -args -dirbench.sizes=1000000 for the 1M row,
// which the default suite leaves out: filling it takes minutes).
var tableSizes = flag.String("dirbench.sizes", "", "comma-separated directory sizes for BenchmarkTable (default 10000,100000)")

func tableBenchSizes(tb testing.TB) []int {
	if *tableSizes == "" {
		return benchSizes
	}
	var out []int
	for _, f := range strings.Split(*tableSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 {
			tb.Fatalf("-dirbench.sizes: %q is not a size of at least 1000", f)
		}
		out = append(out, n)
	}
	return out
}

func benchOpen(b *testing.B, ds datastore.Batching) *Directory {
	b.Helper()
	d, err := Open(Deps{Datastore: ds, Self: newPublisher(b, 1).id}, Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

// BenchmarkPut measures one durable Put into a directory that holds n
// Things, on pebble (one fsync per Put) and on an in-memory datastore (the
// directory's own cost), and PutMany in batches of 1000 on pebble.
func BenchmarkPut(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%dk/pebble", n/1000), func(b *testing.B) {
			ds := pebbleStore(b, b.TempDir())
			defer ds.Close()
			d := benchOpen(b, ds)
			c := newCorpus(b)
			c.fill(b, d, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := d.Put(c.next(), nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
		})
		b.Run(fmt.Sprintf("n=%dk/pebble-batch1000", n/1000), func(b *testing.B) {
			ds := pebbleStore(b, b.TempDir())
			defer ds.Close()
			d := benchOpen(b, ds)
			c := newCorpus(b)
			c.fill(b, d, n)
			recs := make([]*lmosproto.Record, 1000)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for i := range recs {
					recs[i] = c.next()
				}
				if _, err := d.PutMany(recs); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "puts/s")
		})
		b.Run(fmt.Sprintf("n=%dk/memory", n/1000), func(b *testing.B) {
			d := benchOpen(b, memStore())
			c := newCorpus(b)
			c.fill(b, d, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := d.Put(c.next(), nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
		})
	}
}

// BenchmarkSearch measures queries over n Things (first page of 20), with
// latency percentiles.
func BenchmarkSearch(b *testing.B) {
	for _, n := range benchSizes {
		// Results read their titles and capabilities from the datastore.
		d := benchOpen(b, memStore())
		c := newCorpus(b)
		c.fill(b, d, n)
		qrng := rand.New(rand.NewPCG(3, 4))
		capZipf := rand.NewZipf(qrng, 1.05, 10, uint64(len(c.Caps)-1))
		wordZipf := rand.NewZipf(qrng, 1.1, 1, uint64(len(c.Words)-1))
		queries := []struct {
			name string
			q    func() Query
		}{
			{"capability", func() Query { return Query{Capability: c.Caps[capZipf.Uint64()], Limit: 20} }},
			{"capability-semver", func() Query { return Query{Capability: c.Caps[capZipf.Uint64()] + "@^1.2", Limit: 20} }},
			{"capability-type-vendor", func() Query {
				return Query{Capability: c.Caps[capZipf.Uint64()], Type: "agent", Vendor: c.Vendors[qrng.IntN(len(c.Vendors))], Limit: 20}
			}},
			{"type", func() Query { return Query{Type: "tool", Limit: 20} }},
			{"listing-by-id", func() Query { return Query{ByID: true, Limit: 100} }},
			{"text-1word", func() Query { return Query{Text: c.Words[wordZipf.Uint64()], Limit: 20} }},
			{"text-2words", func() Query {
				return Query{Text: c.Words[wordZipf.Uint64()] + " " + c.Words[wordZipf.Uint64()], Limit: 20}
			}},
			{"text-3words-rare", func() Query {
				return Query{Text: c.Words[100+qrng.IntN(4000)] + " " + c.Words[100+qrng.IntN(4000)] + " " + c.Words[100+qrng.IntN(4000)], Limit: 20}
			}},
		}
		for _, qq := range queries {
			b.Run(fmt.Sprintf("n=%dk/%s", n/1000, qq.name), func(b *testing.B) {
				var lat []time.Duration
				total := 0
				b.ReportAllocs()
				for b.Loop() {
					q := qq.q()
					start := time.Now()
					r, err := d.Search(q)
					lat = append(lat, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
					total += r.Total
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
				b.ReportMetric(float64(total)/float64(len(lat)), "matches")
			})
		}
		d.Close()
	}
}

// BenchmarkMemory reports the heap the directory keeps per 1,000 Things
// (datastore excluded: it discards what it is given). The measurement is
// made once, outside the timed loop.
func BenchmarkMemory(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			c := newCorpus(b)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			d, err := Open(Deps{Datastore: datastore.NewNullDatastore(), Self: newPublisher(b, 1).id}, Config{EventHistory: 1})
			if err != nil {
				b.Fatal(err)
			}
			c.fill(b, d, n)
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(d)
			d.Close()
			for b.Loop() {
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n/1000), "B/1kTDs")
		})
	}
}

// BenchmarkOpen measures loading n Things from pebble at start-up.
func BenchmarkOpen(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			dir := b.TempDir()
			ds := pebbleStore(b, dir)
			d, err := Open(Deps{Datastore: ds, Self: newPublisher(b, 1).id}, Config{})
			if err != nil {
				b.Fatal(err)
			}
			newCorpus(b).fill(b, d, n)
			d.Close()
			// Reopen the datastore, so its compactions after the fill are not
			// timed.
			if err := ds.Close(); err != nil {
				b.Fatal(err)
			}
			ds = pebbleStore(b, dir)
			for b.Loop() {
				d, err := Open(Deps{Datastore: ds, Self: newPublisher(b, 1).id}, Config{})
				if err != nil {
					b.Fatal(err)
				}
				if d.Len() != n {
					b.Fatalf("loaded %d of %d", d.Len(), n)
				}
				d.Close()
			}
			ds.Close()
		})
	}
}
