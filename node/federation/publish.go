package federation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Errors of Publish, Remove and the lookups, wrapped with the details.
var (
	// ErrClosed: the Federation is closed.
	ErrClosed = errors.New("federation: closed")
	// ErrNotFound: no such Thing is known (own, in the directory or in the
	// DHT).
	ErrNotFound = errors.New("thing not found")
	// ErrRemoved: the Thing's newest record is a tombstone.
	ErrRemoved = errors.New("thing removed by its publisher")
)

// Publish signs td as the next version of the node's Thing td.ID and
// publishes it. The version's lmos:seq is the larger of td.Seq and one more
// than the last seq of the Thing (lastSeq: the seq the directory holds,
// tombstone included, or one this node may have announced above it), so a
// new version always supersedes the last; td itself is not modified. The
// record is stored in the directory (with local, the node-local metadata;
// nil keeps what is held) and announced on gossip; when Publish returns
// without error, both are done and the record is durable. The
// announcement leaves while the write's fsync runs when that is safe (see
// publishAhead for when, and what a crash in between leaves), else after
// the fsync. The DHT put and provide follow in the background, a
// second later (after the gossip round, see dhtSettle). It returns the
// stored entry and what the store changed. The network steps are best
// effort: their failures are logged and retried, never returned.
func (f *Federation) Publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error) {
	if td == nil {
		return directory.Entry{}, 0, errors.New("federation: publish: nil TD")
	}
	if td.ID == "" {
		return directory.Entry{}, 0, errors.New("federation: publish: /id: a published Thing needs an id")
	}
	if err := f.checkMember(td); err != nil {
		return directory.Entry{}, 0, fmt.Errorf("federation: publish thing %q: %w", td.ID, err)
	}
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	if f.ctx.Err() != nil {
		return directory.Entry{}, 0, fmt.Errorf("federation: publish thing %q: %w", td.ID, ErrClosed)
	}
	last, err := f.lastSeq(td.ID)
	if err != nil {
		return directory.Entry{}, 0, fmt.Errorf("federation: publish thing %q: %w", td.ID, err)
	}
	next := td.Clone()
	next.Seq = max(next.Seq, last+1)
	next.SetOrganization(f.p.Organization)
	rec, err := lmosproto.SignThing(next, f.p.Key, f.now())
	if err != nil {
		return directory.Entry{}, 0, fmt.Errorf("federation: publish: %w", err)
	}
	// gossipsub runs the topic validator on our own announcement before
	// it sends it; SignThing verified the record already.
	f.intake.Signed(rec)
	change, err := f.storeAndSpread(ctx, rec, local, last, nil)
	if err != nil {
		return directory.Entry{}, 0, fmt.Errorf("federation: publish thing %q: %w", td.ID, err)
	}
	entry, ok := f.dir.Latest(f.self, td.ID)
	if !ok { // impossible: just stored, and own Things do not expire
		return directory.Entry{}, 0, fmt.Errorf("federation: publish thing %q: not in the directory after storing it", td.ID)
	}
	f.log.Info("published thing", "thing", rec.ThingID, "seq", rec.Seq, "change", change.String())
	return entry, change, nil
}

// Remove publishes a signed tombstone for the node's Thing id, at one more
// than its last seq, by the same path as Publish. It fails with an error
// wrapping ErrNotFound if the node publishes no such Thing (or removed it
// already).
func (f *Federation) Remove(ctx context.Context, id string) error {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	if f.ctx.Err() != nil {
		return fmt.Errorf("federation: remove thing %q: %w", id, ErrClosed)
	}
	held, ok := f.dir.Latest(f.self, id)
	if !ok || held.Tombstone {
		return fmt.Errorf("federation: remove thing %q: %w", id, ErrNotFound)
	}
	last, err := f.lastSeq(id)
	if err != nil {
		return fmt.Errorf("federation: remove thing %q: %w", id, err)
	}
	rec, err := lmosproto.SignTombstone(id, last+1, f.p.Key, f.now())
	if err != nil {
		return fmt.Errorf("federation: remove: %w", err)
	}
	f.intake.Signed(rec)
	// A tombstone is public even for a Thing restricted to groups: it
	// names nothing but the id (and republication cannot tell whose it
	// was). The members hear it on their groups' topics too, where they
	// heard the Thing.
	if _, err := f.storeAndSpread(ctx, rec, nil, last, held.Groups); err != nil {
		return fmt.Errorf("federation: remove thing %q: %w", id, err)
	}
	f.log.Info("removed thing", "thing", id, "seq", rec.Seq)
	return nil
}

// beginRun marks the directory's run (directory.BeginRun) once per
// Federation, before the first publication that may announce ahead of
// its write. The caller holds pubMu.
func (f *Federation) beginRun() error {
	if f.runBegun {
		return nil
	}
	unclean, err := f.dir.BeginRun()
	if err != nil {
		return err
	}
	f.runBegun, f.unclean = true, unclean
	if unclean {
		f.log.Warn("the last run ended without closing; the next version of each own Thing skips one seq, which it may have announced")
	}
	return nil
}

// lastSeq returns the highest seq the node may have signed and sent out
// for its Thing id: the seq the directory holds (0 if none), or one more
// if the last run crashed and the Thing has not been published since (a
// version announced before its write was durable, publishAhead, may be
// lost from the directory, and it had exactly that seq). The caller
// holds pubMu.
func (f *Federation) lastSeq(id string) (uint64, error) {
	if err := f.beginRun(); err != nil {
		return 0, err
	}
	var last uint64
	if held, ok := f.dir.Latest(f.self, id); ok {
		last = held.Seq
	}
	if _, known := f.settled[id]; !known && f.unclean {
		last++
	}
	return last, nil
}

// isSettled reports whether every seq of Thing id this node ever
// announced is durable in the directory. The caller holds pubMu.
func (f *Federation) isSettled(id string) bool {
	if settled, known := f.settled[id]; known {
		return settled
	}
	return !f.unclean
}

// allSettled reports whether every seq this node announced in this run is
// durable. The caller holds pubMu.
func (f *Federation) allSettled() bool {
	for _, settled := range f.settled {
		if !settled {
			return false
		}
	}
	return true
}

// storeAndSpread stores rec, the next version of an own Thing after seq
// last, in the directory and spreads it (announce topic and DHT, or the
// groups' topics; groups, if set, are the groups of the Thing a tombstone
// removes, which hear it too). When publishAhead allows, it announces
// while the write's fsync runs (directory.PutUnsynced, then Sync), else
// after the write is durable; it returns after both. The caller holds
// pubMu.
func (f *Federation) storeAndSpread(ctx context.Context, rec *lmosproto.Record, local *directory.Local, last uint64, groups []string) (directory.Change, error) {
	id := rec.ThingID
	if !f.publishAhead(rec, last, groups) {
		change, err := f.dir.Put(rec, local)
		if err != nil {
			return change, err
		}
		f.settled[id] = true
		if len(groups) > 0 {
			f.spreadScoped(ctx, groups, rec)
		}
		f.spread(ctx, rec)
		return change, nil
	}
	// The write is applied (and its fsync started) first, so that the
	// node holds what it announces; the announcement then leaves while
	// the fsync runs. Until the fsync is done the Thing is not settled:
	// if it fails, the next version (above rec.Seq, which the directory
	// holds in memory) is written before it is announced.
	change, err := f.dir.PutUnsynced(rec, local)
	if err != nil {
		return change, err
	}
	f.settled[id] = false
	f.spread(ctx, rec)
	if err := f.dir.Sync(); err != nil {
		return change, err
	}
	f.settled[id] = true
	return change, nil
}

// publishAhead reports whether rec, the next version of an own Thing
// after seq last, may be announced before its write is durable (while
// the fsync runs) rather than after: only a public record (announce topic and DHT; not
// one for groups' topics, whose own-message checks read the directory),
// of seq last+1 exactly, of a Thing settled (every seq announced for it is
// stored durably). A crash between the announcement and the write can
// then lose exactly one version, of seq held+1 (held: the seq the
// directory holds): other nodes may hold it, this one does not. After
// such a crash (the directory's run marker, directory.BeginRun, was not
// cleared by Close) every own Thing's next version skips that seq
// (lastSeq) and is written before it is announced (not settled yet), so
// no seq is ever signed twice, whatever crashes follow; until then the
// others keep the lost version (newer than what this node republishes)
// until it expires. An fsync that fails after the announcement leaves
// the Thing unsettled the same way. The caller holds pubMu.
func (f *Federation) publishAhead(rec *lmosproto.Record, last uint64, groups []string) bool {
	return (f.topic != nil || f.sharded()) && public(rec) && len(groups) == 0 && rec.Seq == last+1 && f.isSettled(rec.ThingID)
}

// spread announces rec and queues it for the DHT, or hands a group-scoped
// record to Deps.Scoped. The caller holds pubMu.
func (f *Federation) spread(ctx context.Context, rec *lmosproto.Record) {
	if !public(rec) {
		f.spreadScoped(ctx, rec.TD.Groups, rec)
		return
	}
	f.announce(ctx, rec)
	f.dhtq.add(rec)
}

// republishLoop republishes the own records when the federation starts
// (re-signing those signed more than half a republish interval ago) and
// then every RepublishInterval (re-signing all).
func (f *Federation) republishLoop() {
	f.reclaim()
	f.republish(false)
	f.every(f.cfg.RepublishInterval, func() { f.republish(true) })
}

// every calls fn every d until the federation closes.
func (f *Federation) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// reclaim publishes a new version of every own Thing whose
// lmos:organization is not Deps.Organization (the operator bound the
// node to another organisation, or unbound it).
func (f *Federation) reclaim() {
	f.reclaimMu.Lock()
	defer f.reclaimMu.Unlock()
	for _, e := range f.dir.OwnRecords() {
		rec, err := e.Record()
		if err != nil || rec.Tombstone() || rec.TD.Organization() == f.p.Organization {
			continue
		}
		if _, _, err := f.Publish(f.ctx, rec.TD, nil); err != nil {
			f.log.Error("republish with the organisation claim", "thing", e.ThingID, "err", err)
		}
	}
}

// republish publishes every own record again, same seq: re-signed with a
// fresh proof if all is set or its proof is older than half a republish
// interval (so that no peer sees it expire before the next republication),
// as it is otherwise.
func (f *Federation) republish(all bool) {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	now := f.now()
	var n int
	for _, e := range f.dir.OwnRecords() {
		if f.ctx.Err() != nil {
			return
		}
		rec, err := e.Record()
		if err != nil {
			f.log.Error("read own record", "thing", e.ThingID, "err", err)
			continue
		}
		if all || now.Sub(e.Signed) > f.cfg.RepublishInterval/2 {
			if rec = f.resignStored(rec, now); rec == nil {
				continue
			}
		}
		f.spread(f.ctx, rec)
		n++
	}
	if n > 0 {
		f.log.Debug("republished own things", "records", n, "resigned", all)
	}
}

// resignStored re-signs own record rec (resign) and stores the result in
// the directory; nil, logged, if either fails. The caller holds pubMu.
func (f *Federation) resignStored(rec *lmosproto.Record, now time.Time) *lmosproto.Record {
	again, err := f.resign(rec, now)
	if err != nil {
		f.log.Error("re-sign own record", "thing", rec.ThingID, "seq", rec.Seq, "err", err)
		return nil
	}
	if _, err := f.dir.Put(again, nil); err != nil {
		f.log.Error("store re-signed record", "thing", rec.ThingID, "seq", rec.Seq, "err", err)
		return nil
	}
	return again
}

// resign signs rec again at the same seq, dated now, or a second after
// rec's proof if that is later: proofs carry whole seconds, and Ed25519
// signatures are deterministic, so a record re-signed within the second of
// its proof would be the same bytes, the same gossipsub message, and
// dropped as a duplicate by every peer (and by our own pubsub).
func (f *Federation) resign(rec *lmosproto.Record, now time.Time) (*lmosproto.Record, error) {
	if prev := rec.Signer.Created; !now.Truncate(time.Second).After(prev) {
		now = prev.Add(time.Second)
	}
	var err error
	if rec.Tombstone() {
		rec, err = lmosproto.SignTombstone(rec.ThingID, rec.Seq, f.p.Key, now)
	} else {
		rec, err = lmosproto.SignThing(rec.TD, f.p.Key, now)
	}
	if err == nil {
		f.intake.Signed(rec)
	}
	return rec, err
}

// DHT worker timing.
const (
	// dhtTimeout bounds one record's put and provides.
	dhtTimeout = time.Minute
	// dhtRetryMin and dhtRetryMax bound the backoff (node/backoff) of a
	// failed put: a node that publishes before it has peers puts its
	// records soon after it finds some.
	dhtRetryMin = 15 * time.Second
	dhtRetryMax = 30 * time.Minute
	// dhtSettle is how long a record waits in the queue before the
	// worker puts it: the put (a closest-peers lookup that every peer
	// answers, then ~20 PUTs, each verified by its receiver) is work
	// proportional to the network on every node, and would compete for
	// CPU with the gossip round, which brings the record to the
	// subscribed nodes in tens of milliseconds; and versions of a Thing
	// published within it are put once, the newest.
	dhtSettle = time.Second
)

// dhtQueue is the DHT worker's queue: at most one record per Thing (a newer
// one replaces a queued older one), each due at a time.
type dhtQueue struct {
	f    *Federation
	wake chan struct{}

	mu      sync.Mutex
	pending map[string]dhtItem // by DHT key

	// provided is when the worker last provided each provider key; only
	// the worker (run) uses it.
	provided map[cid.Cid]time.Time
}

type dhtItem struct {
	rec     *lmosproto.Record
	keys    []cid.Cid // lmosdht.ProviderKeys(rec.TD)
	attempt int
	due     time.Time
	retry   *backoff.Backoff // nil until the first failure
}

func newDHTQueue(f *Federation) *dhtQueue {
	return &dhtQueue{f: f, wake: make(chan struct{}, 1), pending: make(map[string]dhtItem), provided: make(map[cid.Cid]time.Time)}
}

// DHTQueue returns the number of own records waiting to be put into the
// DHT with their provider records, failed ones included (the metric
// lmos_dht_queue_records): a backlog the worker, one record at a time,
// has not reached.
func (f *Federation) DHTQueue() int {
	f.dhtq.mu.Lock()
	defer f.dhtq.mu.Unlock()
	return len(f.dhtq.pending)
}

// add queues rec for the DHT, due dhtSettle from now, or when the record
// of the Thing it replaces in the queue was due (so that a Thing updated
// more often than dhtSettle is still put). Without a DHT it does nothing.
func (q *dhtQueue) add(rec *lmosproto.Record) {
	if q.f.p.DHT == nil {
		return
	}
	key := lmosdht.ThingKey(rec.Publisher(), rec.ThingID)
	due := time.Now().Add(dhtSettle)
	q.mu.Lock()
	if old, ok := q.pending[key]; ok && old.retry == nil && old.due.Before(due) {
		due = old.due
	}
	q.pending[key] = dhtItem{rec: rec, keys: lmosdht.ProviderKeys(rec.TD), due: due}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next removes and returns the item to put first of those due at now
// (ok false if none is); when none is, it returns the time the first will
// be (zero if the queue is empty). First is an item with a provider key
// that unprovided says is not provided yet: a capability, type or vendor
// the node did not announce in the DHT before, which no cold lookup can
// find until it is (a backlog of republications must not hold it back);
// then the one due earliest.
func (q *dhtQueue) next(now time.Time, unprovided func([]cid.Cid) bool) (dhtItem, bool, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var (
		best            dhtItem
		bestKey         string
		bestNew, picked bool
		soonest         time.Time
	)
	for key, it := range q.pending {
		if it.due.After(now) {
			if soonest.IsZero() || it.due.Before(soonest) {
				soonest = it.due
			}
			continue
		}
		isNew := unprovided(it.keys)
		if !picked || isNew && !bestNew || isNew == bestNew && it.due.Before(best.due) {
			best, bestKey, bestNew, picked = it, key, isNew, true
		}
	}
	if picked {
		delete(q.pending, bestKey)
	}
	return best, picked, soonest
}

// retry queues a failed item again with backoff, unless a newer record of
// its Thing was queued meanwhile.
func (q *dhtQueue) retry(it dhtItem, now time.Time) {
	key := lmosdht.ThingKey(it.rec.Publisher(), it.rec.ThingID)
	if it.retry == nil {
		it.retry = backoff.New(dhtRetryMin, dhtRetryMax)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.pending[key]; ok {
		return
	}
	it.attempt++
	it.due = now.Add(it.retry.NextBackOff())
	q.pending[key] = it
}

// run is the DHT worker: it puts and provides the queued records one by
// one until the federation closes.
func (q *dhtQueue) run() {
	f := q.f
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		it, ok, soonest := q.next(time.Now(), q.unprovided)
		if ok {
			if err := q.put(it); err != nil {
				f.log.Debug("dht publish failed; will retry", "thing", it.rec.ThingID, "seq", it.rec.Seq, "attempt", it.attempt+1, "err", err)
				q.retry(it, time.Now())
			}
			if f.ctx.Err() != nil {
				return
			}
			continue
		}
		var tick <-chan time.Time
		if !soonest.IsZero() {
			timer.Reset(time.Until(soonest))
			tick = timer.C
		}
		select {
		case <-f.ctx.Done():
			return
		case <-q.wake:
		case <-tick:
		}
		timer.Stop()
	}
}

// put provides rec's keys and stores rec under its key. The provider
// records go first: they are what a lookup by capability finds.
func (q *dhtQueue) put(it dhtItem) error {
	f, rec := q.f, it.rec
	ctx, cancel := context.WithTimeout(f.ctx, dhtTimeout)
	defer cancel()
	q.forgetStale()
	for _, c := range it.keys {
		if _, fresh := q.provided[c]; fresh {
			continue
		}
		if err := f.p.DHT.Provide(ctx, c, true); err != nil {
			return fmt.Errorf("provide %s: %w", c, err)
		}
		q.provided[c] = time.Now()
	}
	key := lmosdht.ThingKey(rec.Publisher(), rec.ThingID)
	if err := f.p.DHT.PutValue(ctx, key, rec.Raw); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// forgetStale forgets the keys provided long enough ago to provide them
// again. A provider record names the node, not the Thing, so the second
// Thing of a type, vendor or capability needs no new one: a key provided
// less than half a republish interval ago is not provided again. A key
// provided just before a republication is so provided again at the next
// one, at most 1.5 intervals later, well within a provider record's life
// (dht.MaxRecordAge, four intervals).
func (q *dhtQueue) forgetStale() {
	provideFresh := q.f.cfg.RepublishInterval / 2
	now := time.Now()
	for c, at := range q.provided {
		if now.Sub(at) >= provideFresh {
			delete(q.provided, c)
		}
	}
}

// unprovided reports whether one of keys is a provider key the worker
// has not provided (recently): a key a lookup cannot find yet.
func (q *dhtQueue) unprovided(keys []cid.Cid) bool {
	for _, c := range keys {
		if _, fresh := q.provided[c]; !fresh {
			return true
		}
	}
	return false
}
