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
// than the seq the directory holds for the Thing (tombstone included), so
// a new version always supersedes the last; td itself is not modified. The
// record is stored in the directory (with local, the node-local metadata;
// nil keeps what is held) and durable before Publish announces it on
// gossip; the DHT put and provide follow in the background, a second
// later (after the gossip round, see dhtSettle). It returns the
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
	next := td.Clone()
	if held, ok := f.dir.Latest(f.self, td.ID); ok && next.Seq <= held.Seq {
		next.Seq = held.Seq + 1
	}
	if next.Seq == 0 {
		next.Seq = 1
	}
	rec, err := lmosproto.SignThing(next, f.p.Key, f.now())
	if err != nil {
		return directory.Entry{}, 0, fmt.Errorf("federation: publish: %w", err)
	}
	// gossipsub runs the topic validator on our own announcement before
	// it sends it; SignThing verified the record already.
	f.intake.Signed(rec)
	change, err := f.dir.Put(rec, local)
	if err != nil {
		return directory.Entry{}, 0, fmt.Errorf("federation: publish thing %q: %w", td.ID, err)
	}
	entry, ok := f.dir.Latest(f.self, td.ID)
	if !ok { // impossible: just stored, and own Things do not expire
		return directory.Entry{}, 0, fmt.Errorf("federation: publish thing %q: not in the directory after storing it", td.ID)
	}
	f.spread(ctx, rec)
	f.log.Info("published thing", "thing", rec.ThingID, "seq", rec.Seq, "change", change.String())
	return entry, change, nil
}

// Remove publishes a signed tombstone for the node's Thing id, at one more
// than the seq held, by the same path as Publish. It fails with an error
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
	rec, err := lmosproto.SignTombstone(id, held.Seq+1, f.p.Key, f.now())
	if err != nil {
		return fmt.Errorf("federation: remove: %w", err)
	}
	f.intake.Signed(rec)
	if _, err := f.dir.Put(rec, nil); err != nil {
		return fmt.Errorf("federation: remove thing %q: %w", id, err)
	}
	// A tombstone is public even for a Thing restricted to groups: it
	// names nothing but the id (and republication cannot tell whose it
	// was). The members hear it on their groups' topics too, where they
	// heard the Thing.
	if len(held.Groups) > 0 {
		f.spreadScoped(ctx, held.Groups, rec)
	}
	f.spread(ctx, rec)
	f.log.Info("removed thing", "thing", id, "seq", rec.Seq)
	return nil
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
	f.republish(false)
	t := time.NewTicker(f.cfg.RepublishInterval)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
			f.republish(true)
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
			if rec, err = f.resign(rec, now); err != nil {
				f.log.Error("re-sign own record", "thing", e.ThingID, "seq", e.Seq, "err", err)
				continue
			}
			if _, err := f.dir.Put(rec, nil); err != nil {
				f.log.Error("store re-signed record", "thing", e.ThingID, "seq", e.Seq, "err", err)
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
	attempt int
	due     time.Time
	retry   *backoff.Backoff // nil until the first failure
}

func newDHTQueue(f *Federation) *dhtQueue {
	return &dhtQueue{f: f, wake: make(chan struct{}, 1), pending: make(map[string]dhtItem), provided: make(map[cid.Cid]time.Time)}
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
	q.pending[key] = dhtItem{rec: rec, due: due}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next removes and returns the items due at now, and the time the next
// remaining one is due (zero if none).
func (q *dhtQueue) next(now time.Time) ([]dhtItem, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var due []dhtItem
	var soonest time.Time
	for key, it := range q.pending {
		if !it.due.After(now) {
			due = append(due, it)
			delete(q.pending, key)
			continue
		}
		if soonest.IsZero() || it.due.Before(soonest) {
			soonest = it.due
		}
	}
	return due, soonest
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
		items, soonest := q.next(time.Now())
		for _, it := range items {
			if f.ctx.Err() != nil {
				return
			}
			if err := q.put(it.rec); err != nil {
				f.log.Debug("dht publish failed; will retry", "thing", it.rec.ThingID, "seq", it.rec.Seq, "attempt", it.attempt+1, "err", err)
				q.retry(it, time.Now())
			}
		}
		if len(items) > 0 {
			continue // more may have been queued meanwhile
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

// put stores rec under its key and provides its keys.
func (q *dhtQueue) put(rec *lmosproto.Record) error {
	f := q.f
	ctx, cancel := context.WithTimeout(f.ctx, dhtTimeout)
	defer cancel()
	key := lmosdht.ThingKey(rec.Publisher(), rec.ThingID)
	if err := f.p.DHT.PutValue(ctx, key, rec.Raw); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	// A provider record names the node, not the Thing, so the second
	// Thing of a type, vendor or capability needs no new one: a key
	// provided less than half a republish interval ago is not provided
	// again. A key provided just before a republication is so provided
	// again at the next one, at most 1.5 intervals later, well within a
	// provider record's life (dht.MaxRecordAge, four intervals).
	provideFresh := f.cfg.RepublishInterval / 2
	now := time.Now()
	for c, at := range q.provided {
		if now.Sub(at) >= provideFresh {
			delete(q.provided, c)
		}
	}
	for _, c := range lmosdht.ProviderKeys(rec.TD) {
		if _, fresh := q.provided[c]; fresh {
			continue
		}
		if err := f.p.DHT.Provide(ctx, c, true); err != nil {
			return fmt.Errorf("provide %s: %w", c, err)
		}
		q.provided[c] = now
	}
	return nil
}
