package directory

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	datastore "github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/internal/benchtab"
	lmosds "github.com/lmosnode/lmosnode/node/datastore"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// tableRow is the row of the performance table the directory reports.
const tableRow = "5"

// BenchmarkTable reports row 5 of the performance table (scripts/bench.sh):
// for the synthetic federations of 10k and 100k Things, the publish rate
// (Put with its fsync, PutMany in batches of 1000), the latency of a
// capability query, a free-text query and a listing page (the first one and
// one in the middle), and the heap the directory keeps per 1,000 Things.
// Each figure is measured beside a baseline in the same run:
//
//   - publish: pebble itself, writing the same envelopes with one fsync per
//     write (per batch for PutMany) into the same database;
//   - queries: plain Go over a slice of the same Things (a map from
//     capability to Things; for text, a substring scan of every Thing's
//     text; for listings, a sort of every Thing by title), paged the same
//     way;
//   - memory: a map holding the parsed TDs of the same Things.
//
// The directories are built once per size and shared by the sub-benchmarks;
// each sub-benchmark times its operations one by one and reports their
// rate or percentiles.
func BenchmarkTable(b *testing.B) {
	for _, n := range tableBenchSizes(b) {
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			if n <= 100_000 {
				// Above 100k the publish rows would mostly time pebble's
				// compactions of the fill; the 1M row is the queries'.
				benchTablePublish(b, n)
			}
			benchTableQueries(b, n)
		})
	}
}

// tableCase names a case of the table, e.g. "directory 100k capability query".
func tableCase(n int, what string) string {
	return fmt.Sprintf("directory %dk %s", n/1000, what)
}

// benchTablePublish measures Put and PutMany into a directory that holds n
// Things, on the node's datastore (node/datastore), against pebble writing
// the same bytes into the same database. The Things written are the
// node's own, which the node's datastore writes durably (one fsync per
// commit); the n Things filled in first are learned ones.
func benchTablePublish(b *testing.B, n int) {
	self := newPublisher(b, 1).id
	ds, err := lmosds.Open(lmosds.Deps{Self: self}, lmosds.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer ds.Close()
	db := ds.Pebble()
	d := benchOpen(b, ds)
	defer d.Close()
	c := newCorpus(b)
	c.fill(b, d, n)
	// own is the record of a new Thing of the node's own.
	own := func() *lmosproto.Record {
		rec := c.next()
		rec.Signer.PeerID = self
		return rec
	}

	// envelopeBytes is what the directory stores for rec.
	envelopeBytes := func(rec *lmosproto.Record) []byte {
		env := envelope{Own: true, Seq: rec.Seq, Signed: rec.Signer.Created, Created: t0, Modified: t0,
			ThingID: rec.ThingID, Summary: summarize(rec.TD), Raw: rec.Raw}
		v, err := env.marshal()
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	rawKey := func(rec *lmosproto.Record) []byte {
		return datastore.NewKey("/bench/raw").ChildString(rec.Publisher().String()).ChildString(idEncoding.EncodeToString([]byte(rec.ThingID))).Bytes()
	}

	// Each iteration writes once through the directory and once straight
	// into pebble, one right after the other (in turns first), timing
	// each: both see the same disk and the same background work. (Measured one after the
	// other, whichever ran first after the fill above paid for pebble's
	// flushes and compactions of it: the directory was 0.5× pebble in
	// that order and 1.17× in the other.)
	var put, raw, putConc, rawConc, putMany, rawMany float64
	b.Run("put", func(b *testing.B) {
		put, raw = pairedRates(b, 1, func() (lmos, base func()) {
			rec, other := own(), own()
			k, v := rawKey(other), envelopeBytes(other)
			return func() {
					if _, err := d.Put(rec, nil); err != nil {
						b.Fatal(err)
					}
				}, func() {
					if err := db.Set(k, v, pebble.Sync); err != nil {
						b.Fatal(err)
					}
				}
		})
	})
	// writers Puts at once, each acknowledged when durable, against as
	// many concurrent pebble Sets with pebble.Sync (whose write-ahead log
	// shares an fsync among the commits waiting together).
	const writers = 8
	b.Run("put-concurrent", func(b *testing.B) {
		putConc, rawConc = pairedRates(b, writers, func() (lmos, base func()) {
			recs := make([]*lmosproto.Record, writers)
			keys, vals := make([][]byte, writers), make([][]byte, writers)
			for i := range writers {
				recs[i] = own()
				other := own()
				keys[i], vals[i] = rawKey(other), envelopeBytes(other)
			}
			return func() {
					concurrently(writers, func(i int) error {
						_, err := d.Put(recs[i], nil)
						return err
					}, b)
				}, func() {
					concurrently(writers, func(i int) error { return db.Set(keys[i], vals[i], pebble.Sync) }, b)
				}
		})
	})
	const batch = 1000
	b.Run("putmany", func(b *testing.B) {
		putMany, rawMany = pairedRates(b, batch, func() (lmos, base func()) {
			recs := make([]*lmosproto.Record, batch)
			for i := range recs {
				recs[i] = own()
			}
			keys, vals := make([][]byte, batch), make([][]byte, batch)
			for i := range keys {
				rec := own()
				keys[i], vals[i] = rawKey(rec), envelopeBytes(rec)
			}
			return func() {
					if _, err := d.PutMany(recs); err != nil {
						b.Fatal(err)
					}
				}, func() {
					bt := db.NewBatch()
					for i := range keys {
						if err := bt.Set(keys[i], vals[i], nil); err != nil {
							b.Fatal(err)
						}
					}
					if err := bt.Commit(pebble.Sync); err != nil {
						b.Fatal(err)
					}
				}
		})
	})
	benchtab.Print(benchtab.Row{Row: tableRow, Case: tableCase(n, "publish (Put, fsync each)"), Metric: "rate", Unit: "TDs/s",
		LMOS: put, Base: raw, Baseline: "pebble Set+fsync of the same envelope"})
	benchtab.Print(benchtab.Row{Row: tableRow, Case: tableCase(n, fmt.Sprintf("publish (Put, %d writers at once)", writers)), Metric: "rate", Unit: "TDs/s",
		LMOS: putConc, Base: rawConc, Baseline: fmt.Sprintf("%d concurrent pebble Set+fsync", writers)})
	benchtab.Print(benchtab.Row{Row: tableRow, Case: tableCase(n, "publish (PutMany, 1000 per batch)"), Metric: "rate", Unit: "TDs/s",
		LMOS: putMany, Base: rawMany, Baseline: "pebble batch of the same envelopes, fsync"})
}

// concurrently runs op(0) … op(n-1) in n goroutines and waits for them;
// the benchmark fails on an error.
func concurrently(n int, op func(int) error, b *testing.B) {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = op(i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
}

// pairedRates times, in every iteration, one operation of lmosnode and
// one of its baseline (both from prepare, which is not timed), in turns
// first, and returns the rates of both in items per second.
func pairedRates(b *testing.B, items int, prepare func() (lmos, base func())) (lmosRate, baseRate float64) {
	var lmosTotal, baseTotal time.Duration
	timed := func(op func()) time.Duration {
		start := time.Now()
		op()
		return time.Since(start)
	}
	ops := 0
	for b.Loop() {
		lmos, base := prepare()
		if ops%2 == 0 {
			lmosTotal += timed(lmos)
			baseTotal += timed(base)
		} else {
			baseTotal += timed(base)
			lmosTotal += timed(lmos)
		}
		ops++
	}
	lmosRate = float64(ops*items) / lmosTotal.Seconds()
	baseRate = float64(ops*items) / baseTotal.Seconds()
	b.ReportMetric(lmosRate, "TDs/s")
	b.ReportMetric(baseRate, "baseline-TDs/s")
	return lmosRate, baseRate
}

// plainThing is a Thing as the baselines of the queries hold it.
type plainThing struct {
	publisher peer.ID
	id, title string
	text      string // title, description and capabilities, lower case
	expires   int64
}

func comparePlain(a, b *plainThing) int {
	return cmp.Or(strings.Compare(a.title, b.title), strings.Compare(string(a.publisher), string(b.publisher)), strings.Compare(a.id, b.id))
}

// plainPage sorts hits and returns the page [offset, offset+limit).
func plainPage(hits []*plainThing, offset, limit int, less func(a, b *plainThing) int) []*plainThing {
	slices.SortFunc(hits, less)
	if offset >= len(hits) {
		return nil
	}
	return hits[offset:min(len(hits), offset+limit)]
}

// benchTableQueries measures the memory of a directory of n Things and
// queries over it, against plain Go over the same Things.
func benchTableQueries(b *testing.B, n int) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// The heap is measured on a directory whose datastore discards what
	// it is given, so that it is the directory's own (the records live
	// in the datastore); the queries run on the node's datastore
	// (pebble), which results read their titles and capabilities from.
	mem, err := Open(Deps{Datastore: datastore.NewNullDatastore(), Self: newPublisher(b, 1).id}, Config{EventHistory: 1})
	if err != nil {
		b.Fatal(err)
	}
	newCorpus(b).fill(b, mem, n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	dirMem := float64(after.HeapAlloc-before.HeapAlloc) / float64(n/1000) / (1 << 20)
	mem.Close()
	runtime.KeepAlive(mem)

	ds, err := lmosds.Open(lmosds.Deps{Self: newPublisher(b, 1).id}, lmosds.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer ds.Close()
	d, err := Open(Deps{Datastore: ds, Self: newPublisher(b, 1).id}, Config{EventHistory: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	c := newCorpus(b)
	c.fill(b, d, n)

	// The same Things again (same seed), as parsed TDs.
	runtime.GC()
	runtime.ReadMemStats(&before)
	pc := newCorpus(b)
	tds := make(map[string]*lmosproto.TD, n)
	pubs := make(map[string]peer.ID, n)
	for range n {
		rec := pc.next()
		tds[rec.ThingID] = rec.TD
		pubs[rec.ThingID] = rec.Publisher()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	tdMem := float64(after.HeapAlloc-before.HeapAlloc) / float64(n/1000) / (1 << 20)
	b.ReportMetric(dirMem, "MB/1kTDs")
	benchtab.Print(benchtab.Row{Row: tableRow, Case: tableCase(n, "memory"), Metric: "heap per 1k TDs", Unit: "MB",
		LMOS: dirMem, Base: tdMem, Baseline: "map of the parsed TDs"})

	expires := time.Now().Add(DefaultTTL).UnixNano()
	all := make([]*plainThing, 0, n)
	byCap := make(map[string][]*plainThing)
	for id, td := range tds {
		var text strings.Builder
		text.WriteString(td.Title + " " + td.Description)
		for _, cp := range td.Capabilities {
			text.WriteString(" " + cp.ID + " " + cp.Description + " " + strings.Join(cp.Examples, " "))
		}
		p := &plainThing{publisher: pubs[id], id: id, title: td.Title, text: strings.ToLower(text.String()), expires: expires}
		all = append(all, p)
		for _, cp := range td.Capabilities {
			if l := byCap[cp.ID]; len(l) == 0 || l[len(l)-1] != p {
				byCap[cp.ID] = append(l, p)
			}
		}
	}
	clear(tds)

	qrng := rand.New(rand.NewPCG(3, 4))
	capZipf := rand.NewZipf(qrng, 1.05, 10, uint64(len(c.Caps)-1))
	wordZipf := rand.NewZipf(qrng, 1.1, 1, uint64(len(c.Words)-1))
	const page, listPage = 20, 100
	deep := n / 2

	search := func(q func() Query) func() time.Duration {
		return func() time.Duration {
			q := q()
			start := time.Now()
			_, err := d.Search(q)
			el := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			return el
		}
	}
	capQuery := func() Query { return Query{Capability: c.Caps[capZipf.Uint64()], Limit: page} }
	textQuery := func() Query {
		return Query{Text: c.Words[wordZipf.Uint64()] + " " + c.Words[wordZipf.Uint64()], Limit: page}
	}
	type figure struct{ p50, p99 float64 }
	var capDir, capBase, textDir, textBase, firstDir, deepDir, cursorDir, listBase figure
	run := func(name string, into *figure, op func() time.Duration) {
		b.Run(name, func(b *testing.B) {
			into.p50, into.p99 = timedPercentiles(b, op)
		})
	}
	run("capability", &capDir, search(capQuery))
	run("capability-map", &capBase, func() time.Duration {
		q := capQuery()
		start := time.Now()
		now := time.Now().UnixNano()
		var hits []*plainThing
		for _, p := range byCap[q.Capability] {
			if p.expires > now {
				hits = append(hits, p)
			}
		}
		plainPage(hits, 0, page, comparePlain)
		return time.Since(start)
	})
	run("text", &textDir, search(textQuery))
	run("text-scan", &textBase, func() time.Duration {
		words := strings.Fields(textQuery().Text)
		start := time.Now()
		now := time.Now().UnixNano()
		type scored struct {
			p     *plainThing
			score int
		}
		var hits []scored
		for _, p := range all {
			if p.expires <= now {
				continue
			}
			s := 0
			for _, w := range words {
				if strings.Contains(p.text, w) {
					s++
				}
			}
			if s > 0 {
				hits = append(hits, scored{p, s})
			}
		}
		slices.SortFunc(hits, func(a, b scored) int { return cmp.Or(b.score-a.score, comparePlain(a.p, b.p)) })
		_ = hits[:min(len(hits), page)]
		return time.Since(start)
	})
	run("list-first", &firstDir, search(func() Query { return Query{Limit: listPage} }))
	run("list-deep", &deepDir, search(func() Query { return Query{Offset: deep, Limit: listPage} }))
	// The same page by cursor: the cursor after the entry before it.
	prev, err := d.Search(Query{Offset: deep - 1, Limit: 1})
	if err != nil || len(prev.Entries) != 1 {
		b.Fatalf("entry at %d: %v", deep-1, err)
	}
	cursor := Query{}.CursorAfter(prev.Entries[0])
	run("list-cursor", &cursorDir, search(func() Query { return Query{After: cursor, Limit: listPage} }))
	run("list-sort", &listBase, func() time.Duration {
		start := time.Now()
		now := time.Now().UnixNano()
		hits := make([]*plainThing, 0, len(all))
		for _, p := range all {
			if p.expires > now {
				hits = append(hits, p)
			}
		}
		plainPage(hits, deep, listPage, comparePlain)
		return time.Since(start)
	})

	report := func(what string, dir, base figure, baseline, target string) {
		for _, m := range []struct {
			metric    string
			dir, base float64
		}{{"p50", dir.p50, base.p50}, {"p99", dir.p99, base.p99}} {
			r := benchtab.Row{Row: tableRow, Case: tableCase(n, what), Metric: m.metric, Unit: "ms", LMOS: m.dir, Base: m.base, Baseline: baseline}
			if m.metric == "p50" {
				r.Target = target
			}
			benchtab.Print(r)
		}
	}
	capTarget := ""
	if n == 100_000 {
		capTarget = "≤ 1 ms"
	}
	report("capability query", capDir, capBase, "Go map capability → Things, sort, page of 20", capTarget)
	report("free-text query (2 words)", textDir, textBase, "substring scan of every Thing's text", "")
	report(fmt.Sprintf("listing first page (%d)", listPage), firstDir, listBase, "sort every Thing by title, page", "")
	report(fmt.Sprintf("listing page at offset %dk (%d)", deep/1000, listPage), deepDir, listBase, "sort every Thing by title, page", "")
	report(fmt.Sprintf("listing page after a cursor at %dk (%d)", deep/1000, listPage), cursorDir, listBase, "sort every Thing by title, page", "")
}

// timedPercentiles runs op, which times what it measures, and returns the
// median and 99th percentile in milliseconds.
func timedPercentiles(b *testing.B, op func() time.Duration) (p50, p99 float64) {
	var lat []time.Duration
	for b.Loop() {
		lat = append(lat, op())
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	p50, p99 = ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100])
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	return p50, p99
}
