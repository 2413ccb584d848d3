package directory

import (
	"crypto/ed25519"
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
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The benchmarks run on synthetic federations of 10k and 100k Things: 200
// publishers, 500 vendors, 2,000 capabilities (Zipf-popular, random
// versions), a 5,000-word Zipf vocabulary for titles, descriptions and
// examples, 10 % of the Things restricted to groups.
//
// Signing 100k TDs would take minutes, and Put trusts its caller to have
// verified the record, so the corpus builds proto.Record values directly:
// the TD is a value with the indexed fields, Raw is one real signed TD
// (about 3 KB) shared by every record.

// corpus generates Things deterministically.
type corpus struct {
	rng        *rand.Rand
	words      []string
	wordZipf   *rand.Zipf
	caps       []string
	capZipf    *rand.Zipf
	vendors    []string
	publishers []peer.ID
	raw        []byte
	n          int
}

func newCorpus(tb testing.TB) *corpus {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	c := &corpus{rng: rng}
	letters := "abcdefghijklmnopqrstuvwxyz"
	seen := map[string]bool{}
	for len(c.words) < 5000 {
		b := make([]byte, 3+rng.IntN(8))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			c.words = append(c.words, w)
		}
	}
	c.wordZipf = rand.NewZipf(rng, 1.1, 1, uint64(len(c.words)-1))
	for i := range 2000 {
		c.caps = append(c.caps, fmt.Sprintf("%s-%s-%d", c.words[i%len(c.words)], c.words[(i*7+3)%len(c.words)], i))
	}
	c.capZipf = rand.NewZipf(rng, 1.05, 10, uint64(len(c.caps)-1))
	for i := range 500 {
		c.vendors = append(c.vendors, fmt.Sprintf("Vendor %s %d", c.words[(i*13)%len(c.words)], i))
	}
	for i := range 200 {
		seed := make([]byte, ed25519.SeedSize)
		seed[0], seed[1] = byte(i), byte(i>>8)
		id, err := lmosproto.PeerIDFromEd25519(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
		if err != nil {
			tb.Fatal(err)
		}
		c.publishers = append(c.publishers, id)
	}
	signer := newPublisher(tb, 1)
	c.raw = signer.sign(tb, thingSpec{id: thingID, seq: 1}, t0).Raw
	return c
}

func (c *corpus) word() string { return c.words[c.wordZipf.Uint64()] }

func (c *corpus) sentence(min, max int) string {
	n := min + c.rng.IntN(max-min+1)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.word()
	}
	return strings.Join(ws, " ")
}

// next returns the record of a new Thing.
func (c *corpus) next() *lmosproto.Record {
	c.n++
	rng := c.rng
	td := &lmosproto.TD{
		ID:          fmt.Sprintf("urn:bench:%d", c.n),
		Title:       strings.ToUpper(c.word()[:1]) + c.sentence(1, 3)[1:],
		Description: c.sentence(10, 25),
		Types:       []string{lmosproto.TypeAgent},
		Metadata:    &lmosproto.Metadata{Vendor: &lmosproto.Vendor{Name: c.vendors[rng.IntN(len(c.vendors))]}},
		Seq:         1,
	}
	if rng.IntN(10) < 4 {
		td.Types = []string{lmosproto.TypeTool}
	}
	for range 1 + rng.IntN(4) {
		cp := lmosproto.Capability{
			ID:          c.caps[c.capZipf.Uint64()],
			Version:     fmt.Sprintf("%d.%d.%d", rng.IntN(4), rng.IntN(10), rng.IntN(10)),
			Description: c.sentence(5, 10),
		}
		for range rng.IntN(3) {
			cp.Examples = append(cp.Examples, c.sentence(5, 8))
		}
		td.Capabilities = append(td.Capabilities, cp)
	}
	if rng.IntN(10) == 0 {
		td.Groups = []string{fmt.Sprintf("group-%d", rng.IntN(50))}
	}
	return &lmosproto.Record{
		Raw:     c.raw,
		TD:      td,
		ThingID: td.ID,
		Seq:     1,
		Signer:  lmosproto.Signer{PeerID: c.publishers[rng.IntN(len(c.publishers))], Created: t0},
	}
}

// fill puts n new Things in batches.
func (c *corpus) fill(tb testing.TB, d *Directory, n int) {
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
		capZipf := rand.NewZipf(qrng, 1.05, 10, uint64(len(c.caps)-1))
		wordZipf := rand.NewZipf(qrng, 1.1, 1, uint64(len(c.words)-1))
		queries := []struct {
			name string
			q    func() Query
		}{
			{"capability", func() Query { return Query{Capability: c.caps[capZipf.Uint64()], Limit: 20} }},
			{"capability-semver", func() Query { return Query{Capability: c.caps[capZipf.Uint64()] + "@^1.2", Limit: 20} }},
			{"capability-type-vendor", func() Query {
				return Query{Capability: c.caps[capZipf.Uint64()], Type: "agent", Vendor: c.vendors[qrng.IntN(len(c.vendors))], Limit: 20}
			}},
			{"type", func() Query { return Query{Type: "tool", Limit: 20} }},
			{"listing-by-id", func() Query { return Query{ByID: true, Limit: 100} }},
			{"text-1word", func() Query { return Query{Text: c.words[wordZipf.Uint64()], Limit: 20} }},
			{"text-2words", func() Query {
				return Query{Text: c.words[wordZipf.Uint64()] + " " + c.words[wordZipf.Uint64()], Limit: 20}
			}},
			{"text-3words-rare", func() Query {
				return Query{Text: c.words[100+qrng.IntN(4000)] + " " + c.words[100+qrng.IntN(4000)] + " " + c.words[100+qrng.IntN(4000)], Limit: 20}
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
