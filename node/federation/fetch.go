package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The fetch protocol (proto.ProtocolFetch; docs/wire.md): one request
// {"id": thing id}, answered like a sync (a header, then at most one
// record: the publisher's newest record of that Thing, tombstone
// included; none if it publishes no such Thing or the requester may not
// see it).
const (
	// FetchTimeout bounds one fetch exchange.
	FetchTimeout = 10 * time.Second
	// FetchEvery and FetchBurst are the rate at which a node answers one
	// peer's fetch requests: a directory node fetches every TD announced
	// short, so the burst is larger than the sync protocol's.
	FetchEvery = 100 * time.Millisecond
	FetchBurst = 64
	// maxShorts bounds the short announcements a node keeps unfetched;
	// past it, an arbitrary one is forgotten (a lookup finds its Thing
	// from the DHT's providers anyway).
	maxShorts = 8192
	// maxFetchQueue bounds the fetches a directory node has queued; a
	// short announcement that does not fit waits for a query.
	maxFetchQueue = 1024
	// fetchWorkers is how many fetches a directory node runs at once, and
	// how many a query starts at once.
	fetchWorkers = 4
	// syncBatch: a directory node with at least this many short
	// announcements of one publisher unfetched asks it for all its
	// records in one sync instead (a publisher that announces many Things
	// at once, or republishes them).
	syncBatch = 8
	// fetchRequeue is how often a directory node queues again the short
	// announcements it has not fetched.
	fetchRequeue = 5 * time.Second
)

// fetchRequest is the request frame of the fetch protocol.
type fetchRequest struct {
	ID string `json:"id"`
}

// shortTable holds the short announcements whose records this node has
// not fetched yet, the newest per Thing.
type shortTable struct {
	mu sync.Mutex
	m  map[thingRef]shortAnnouncement
}

// add notes s unless a short announcement of the same or a later seq is
// noted for ref; it reports whether it did.
func (t *shortTable) add(ref thingRef, s shortAnnouncement) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[thingRef]shortAnnouncement)
	}
	if old, ok := t.m[ref]; ok && old.Seq >= s.Seq {
		return false
	}
	if len(t.m) >= maxShorts {
		for k := range t.m {
			delete(t.m, k)
			break
		}
	}
	t.m[ref] = s
	return true
}

// naming returns the noted short announcements that name the provider key
// form.
func (t *shortTable) naming(form string) map[thingRef]shortAnnouncement {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[thingRef]shortAnnouncement)
	for ref, s := range t.m {
		if slices.Contains(s.Keys, form) {
			out[ref] = s
		}
	}
	return out
}

// get returns the short announcement noted for ref.
func (t *shortTable) get(ref thingRef) (shortAnnouncement, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[ref]
	return s, ok
}

// done forgets the note of ref if its seq is at most seq.
func (t *shortTable) done(ref thingRef, seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[ref]; ok && s.Seq <= seq {
		delete(t.m, ref)
	}
}

// of returns the refs noted of publisher p.
func (t *shortTable) of(p peer.ID) []thingRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []thingRef
	for ref := range t.m {
		if ref.publisher == p {
			out = append(out, ref)
		}
	}
	return out
}

// refs returns up to n refs noted.
func (t *shortTable) refs(n int) []thingRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]thingRef, 0, min(n, len(t.m)))
	for ref := range t.m {
		if len(out) == n {
			break
		}
		out = append(out, ref)
	}
	return out
}

// Len returns how many short announcements are noted.
func (t *shortTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// handleFetch answers a fetch request on s.
func (f *Federation) handleFetch(s network.Stream) {
	f.serveRecords(s, "fetch", FetchTimeout, func(p []byte, remote peer.ID) ([][]byte, bool, error) {
		var req fetchRequest
		if err := json.Unmarshal(p, &req); err != nil {
			return nil, false, fmt.Errorf("fetch request: %w", err)
		}
		if req.ID == "" {
			return nil, false, errors.New("fetch request: id: empty")
		}
		if !f.fetchLimit.Allow(remote) {
			return nil, false, fmt.Errorf("rate limited: at most %d requests, then one every %s", FetchBurst, FetchEvery)
		}
		e, ok := f.dir.Latest(f.self, req.ID)
		if !ok || e.Groups != nil && !f.allowed(e.Groups, e.ThingID, remote) {
			return nil, false, nil
		}
		raw, err := e.Raw()
		if err != nil {
			return nil, false, fmt.Errorf("read record: %w", err)
		}
		return [][]byte{raw}, false, nil
	})
}

// fetchShort fetches the record a short announcement names, from its
// publisher over the fetch protocol or else from the DHT, checks it as
// every record (Intake.Check: proof, size, freshness, publisher) and that
// it is the version announced (its hash) or a later one, and stores it
// (with opts).
func (f *Federation) fetchShort(ctx context.Context, ref thingRef, s shortAnnouncement, opts ...directory.PutOption) error {
	check := func(raw []byte) (*lmosproto.Record, error) {
		rec, err := f.intake.Check(ref.publisher, raw)
		switch {
		case err != nil:
			return nil, err
		case rec.ThingID != ref.id:
			return nil, fmt.Errorf("thing %q: asked for %q", rec.ThingID, ref.id)
		case rec.Seq < s.Seq || rec.Seq == s.Seq && recordHash(raw) != s.Hash:
			return nil, fmt.Errorf("thing %q: seq %d, hash %s: not the version announced (seq %d, hash %s)", ref.id, rec.Seq, recordHash(raw), s.Seq, s.Hash)
		}
		return rec, nil
	}
	rec, err := f.fetchFrom(ctx, ref, check)
	if err != nil && f.p.DHT != nil {
		f.log.Debug("fetch from the publisher failed; asking the DHT", "thing", ref.id, "publisher", ref.publisher, "err", err)
		var raw []byte
		if raw, err = f.p.DHT.GetValue(ctx, lmosdht.ThingKey(ref.publisher, ref.id)); err == nil {
			rec, err = check(raw)
		}
	}
	if err != nil {
		return fmt.Errorf("federation: fetch thing %q of %s: %w", ref.id, ref.publisher, err)
	}
	if _, err := f.intake.Store("fetch", rec, opts...); err != nil && !errors.Is(err, ErrNotNewer) {
		return fmt.Errorf("federation: fetch thing %q of %s: %w", ref.id, ref.publisher, err)
	}
	f.shorts.done(ref, rec.Seq)
	return nil
}

// fetchFrom runs one fetch exchange with the publisher of ref.
func (f *Federation) fetchFrom(ctx context.Context, ref thingRef, check func([]byte) (*lmosproto.Record, error)) (*lmosproto.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	// The announcement came through the shard's mesh: the publisher may
	// be a peer this node knows no address of.
	if f.p.DHT != nil && f.p.Host.Network().Connectedness(ref.publisher) != network.Connected && len(f.p.Host.Peerstore().Addrs(ref.publisher)) == 0 {
		if ai, err := f.p.DHT.FindPeer(ctx, ref.publisher); err == nil {
			f.p.Host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.TempAddrTTL)
		}
	}
	s, err := f.p.Host.NewStream(network.WithAllowLimitedConn(ctx, "lmos-fetch"), ref.publisher, lmosproto.ProtocolFetch)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	recs, err := f.request(ctx, s, ref.publisher, fetchRequest{ID: ref.id}, 1, lmosproto.MaxRecordSize, check)
	if err != nil {
		_ = s.Reset()
		return nil, err
	}
	_ = s.Close()
	f.asked(ref.publisher)
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: the publisher sent no record that checks", ErrNotFound)
	}
	return recs[0], nil
}

// fetchShorts fetches the records of the short announcements that name
// the provider key form, fetchWorkers at once, before a lookup answers.
// It returns how many it stored.
func (f *Federation) fetchShorts(ctx context.Context, form string) int {
	todo := f.shorts.naming(form)
	if len(todo) == 0 {
		return 0
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		n   int
		sem = make(chan struct{}, fetchWorkers)
	)
	for ref, s := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f.fetchShort(ctx, ref, s, directory.Used()); err != nil {
				f.log.Debug("fetch for a query", "thing", ref.id, "publisher", ref.publisher, "err", err)
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
		})
	}
	wg.Wait()
	return n
}

// queueFetch queues the fetch of what ref's short announcement names (a
// directory node). A full queue leaves it to a query.
func (f *Federation) queueFetch(ref thingRef) {
	select {
	case f.fetchq <- ref:
	default:
	}
}

// fetchLoop fetches what queueFetch queues, until the federation closes;
// every fetchRequeue it queues again what is still noted (what did not
// fit the queue, or failed).
func (f *Federation) fetchLoop() {
	t := time.NewTicker(fetchRequeue)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
			for _, ref := range f.shorts.refs(maxFetchQueue / fetchWorkers) {
				f.queueFetch(ref)
			}
		case ref := <-f.fetchq:
			f.fetchQueued(ref)
		}
	}
}

// fetchQueued fetches the record of ref's short announcement, or, if
// syncBatch or more of its publisher's are noted, syncs with the publisher.
func (f *Federation) fetchQueued(ref thingRef) {
	s, ok := f.shorts.get(ref)
	if !ok {
		return
	}
	if refs := f.shorts.of(ref.publisher); len(refs) >= syncBatch {
		n, err := f.Sync(f.ctx, ref.publisher, Filter{})
		if err == nil {
			for _, r := range refs {
				if e, ok := f.dir.Latest(r.publisher, r.id); ok {
					f.shorts.done(r, e.Seq)
				}
			}
			f.log.Debug("synced with the publisher of short announcements", "publisher", ref.publisher, "noted", len(refs), "changed", n)
			return
		}
		f.log.Debug("sync for short announcements failed; fetching one", "publisher", ref.publisher, "err", err)
	}
	if err := f.fetchShort(f.ctx, ref, s); err != nil && f.ctx.Err() == nil {
		f.log.Debug("fetch announced thing", "thing", ref.id, "publisher", ref.publisher, "err", err)
	}
}
