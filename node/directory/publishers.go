package directory

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrQuota is returned by Put for a learned record that would take its
// publisher over Config.MaxThingsPerPublisher or
// Config.MaxBytesPerPublisher; the entries held stay as they are.
var ErrQuota = errors.New("over the publisher's quota")

// pubState is what the directory keeps per publisher of learned entries:
// its usage, counted against the quota, and when it was last seen alive.
// It exists while the directory holds at least one learned entry of the
// publisher.
type pubState struct {
	// things and bytes are the learned entries held (tombstones included)
	// and the sizes of their signed records. Changed by writers under mu.
	things int
	bytes  int64
	// live and sum are the publisher's live public entries held and
	// the XOR of their ThingDigest: what its presence beats are compared
	// with (Holding). Changed by writers under mu.
	live int
	sum  uint64
	// since is when this node began to hold the publisher's entries (or
	// loaded them), in Unix nanoseconds: the start of the grace an entry
	// has before Config.OfflineTTL removes it unseen.
	since int64
	// seen is the latest evidence, in Unix nanoseconds, that the publisher
	// was alive (Seen, the proof time of a record put); 0 if none.
	seen atomic.Int64
	// window is how long after seen the publisher counts as online, in
	// nanoseconds, when it said it is seen less often than usual
	// (SeenEvery); 0: Config.OfflineAfter.
	window atomic.Int64
	// place is the publisher's index in Directory.pubTab.
	place uint32
}

// online reports whether the publisher counts as online at now (Unix
// nanoseconds), offline being how long after its last sighting it goes
// offline unless it said otherwise (window).
func (p *pubState) online(now int64, offline time.Duration) bool {
	seen := p.seen.Load()
	return seen != 0 && now-seen < max(int64(offline), p.window.Load())
}

// see records that the publisher was alive at at (Unix nanoseconds); an
// older time than the one held changes nothing.
func (p *pubState) see(at int64) {
	for {
		cur := p.seen.Load()
		if at <= cur || p.seen.CompareAndSwap(cur, at) {
			return
		}
	}
}

// account adds t's usage to its publisher (sign +1) or removes it (-1).
// Own entries count against no quota. Callers hold mu for writing.
func (d *Directory) account(t *thing, sign int) {
	if t.own {
		return
	}
	p := d.pubs[t.publisherID()]
	if p == nil {
		if sign < 0 {
			return
		}
		p = &pubState{since: d.now().UnixNano()}
		d.pubs[t.publisherID()] = p
		d.placePub(p)
	}
	p.things += sign
	p.bytes += int64(sign) * int64(t.size)
	d.learned += int64(sign) * int64(t.size)
	if t.public() {
		p.live += sign
		p.sum ^= ThingDigest(t.id, t.seq)
	}
	if p.things <= 0 {
		delete(d.pubs, t.publisherID())
		d.pubTab[p.place] = nil
		d.pubFree = append(d.pubFree, p.place)
	}
}

// placePub gives p a place in pubTab, which the slots of its Things name
// (slotMeta.pub). Callers hold mu for writing.
func (d *Directory) placePub(p *pubState) {
	if n := len(d.pubFree); n > 0 {
		p.place = d.pubFree[n-1]
		d.pubFree = d.pubFree[:n-1]
	} else {
		if len(d.pubTab) == 0 {
			d.pubTab = append(d.pubTab, nil) // pubOwn
		}
		p.place = uint32(len(d.pubTab))
		d.pubTab = append(d.pubTab, nil)
	}
	d.pubTab[p.place] = p
}

// pubPlace is the place in pubTab of t's publisher: pubOwn for an own
// Thing. Callers hold mu for writing, after account.
func (d *Directory) pubPlace(t *thing) uint32 {
	if t.own {
		return pubOwn
	}
	return d.pubs[t.publisherID()].place
}

// slotOnline is liveness's first result for the Thing of slot meta m.
// Callers hold mu.
func (d *Directory) slotOnline(m *slotMeta, now int64) bool {
	pub := m.publisher()
	if pub == pubOwn {
		return true
	}
	return d.pubTab[pub].online(now, d.cfg.OfflineAfter)
}

// public reports whether t is a live Thing of no group: what a
// publisher's presence beat counts.
func (t *thing) public() bool { return !t.tombstone && len(t.groups()) == 0 }

// ThingDigest is a version of a Thing in a publisher's digest (Holding,
// OwnDigest): the first 8 bytes of the SHA-256 of its id, a zero byte and
// its seq (8 bytes, big-endian). A set's digest is the XOR of its
// members', so it is kept as entries come and go.
func ThingDigest(id string, seq uint64) uint64 {
	h := sha256.New()
	h.Write([]byte(id))
	var b [9]byte
	binary.BigEndian.PutUint64(b[1:], seq)
	h.Write(b[:])
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// Holding returns how many live public Things of the learned publisher
// the directory holds, and their digest (the XOR of their ThingDigest).
func (d *Directory) Holding(publisher peer.ID) (live int, sum uint64) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if p := d.pubs[publisher]; p != nil {
		return p.live, p.sum
	}
	return 0, 0
}

// OwnDigest is Holding for the node's own Things: what its presence
// beats carry.
func (d *Directory) OwnDigest() (live int, sum uint64) {
	now := d.now().UnixNano()
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, t := range d.own {
		if t.public() && !t.expired(now) {
			live++
			sum ^= ThingDigest(t.id, t.seq)
		}
	}
	return live, sum
}

// usage is a put's change to one publisher's usage.
type usage struct {
	things int
	bytes  int64
}

// overQuota reports whether storing rec's entry t in place of old (nil if
// none) takes its learned publisher over the quota, given the changes
// already staged by the same put (pending, updated when it is not over).
// A change that does not grow the usage is never refused, so a publisher
// over a lowered quota may still update and remove its Things. Callers
// hold wmu.
func (d *Directory) overQuota(t, old *thing, pending map[peer.ID]usage) bool {
	if t.own || (d.cfg.MaxThingsPerPublisher == 0 && d.cfg.MaxBytesPerPublisher == 0) {
		return false
	}
	delta := usage{things: 1, bytes: int64(t.size)}
	if old != nil {
		delta = usage{bytes: int64(t.size) - int64(old.size)}
	}
	cur := pending[t.publisherID()]
	if p := d.pubs[t.publisherID()]; p != nil {
		cur.things += p.things
		cur.bytes += p.bytes
	}
	if d.exceeds(cur, delta) {
		return true
	}
	u := pending[t.publisherID()]
	u.things += delta.things
	u.bytes += delta.bytes
	pending[t.publisherID()] = u
	return false
}

// exceeds reports whether delta takes a learned publisher's usage cur
// over the quota.
func (d *Directory) exceeds(cur, delta usage) bool {
	return (delta.things > 0 && d.cfg.MaxThingsPerPublisher > 0 && cur.things+delta.things > d.cfg.MaxThingsPerPublisher) ||
		(delta.bytes > 0 && d.cfg.MaxBytesPerPublisher > 0 && cur.bytes+delta.bytes > d.cfg.MaxBytesPerPublisher)
}

// Usage returns how many learned entries (tombstones included) of
// publisher the directory holds and the bytes of their signed records:
// what Config.MaxThingsPerPublisher and Config.MaxBytesPerPublisher bound.
func (d *Directory) Usage(publisher peer.ID) (things int, bytes int64) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if p := d.pubs[publisher]; p != nil {
		return p.things, p.bytes
	}
	return 0, 0
}

// Seen records that publisher was alive at at: a message it authored, a
// connection to it. It counts for the liveness of the publisher's learned
// Things (Entry.Online); a publisher of which the directory holds nothing
// is not tracked. Safe to call from any goroutine, also from a gossip
// validator.
func (d *Directory) Seen(publisher peer.ID, at time.Time) {
	if p := d.tracked(publisher); p != nil {
		p.see(min(unixNano(at), d.now().UnixNano()))
	}
}

// SeenEvery is Seen of a publisher that said when it is seen next: at
// most every after at (its presence beats, slowed as a federation grows).
// Until the next sighting it counts as online for the longer of
// Config.OfflineAfter and window, which the caller derives from every
// (the federation allows as many missed beats as OfflineAfter does at
// the usual pace).
func (d *Directory) SeenEvery(publisher peer.ID, at time.Time, window time.Duration) {
	if p := d.tracked(publisher); p != nil {
		p.see(min(unixNano(at), d.now().UnixNano()))
		p.window.Store(int64(window))
	}
}

// tracked returns the state of publisher, nil if it is not tracked.
func (d *Directory) tracked(publisher peer.ID) *pubState {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.pubs[publisher]
}

// Tracked reports whether the directory holds a learned entry of
// publisher, and so tracks its liveness.
func (d *Directory) Tracked(publisher peer.ID) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.pubs[publisher] != nil
}

// liveness returns whether t's publisher counts as online at now (Unix
// nanoseconds) and when it was last seen (0: never). Own Things are
// always online. Callers hold mu (read or write) or wmu.
func (d *Directory) liveness(t *thing, now int64) (bool, int64) {
	if t.own {
		return true, 0
	}
	p := d.pubs[t.publisherID()]
	if p == nil {
		return false, 0
	}
	return p.online(now, d.cfg.OfflineAfter), p.seen.Load()
}

// offlineExpired reports whether t is a learned entry whose publisher has
// not been seen for Config.OfflineTTL (or, if longer, the window its
// slowed beats keep it online: SeenEvery), counted from the later of its last
// sighting and the time this node began to hold its entries. Callers hold
// wmu.
func (d *Directory) offlineExpired(t *thing, now int64) bool {
	if t.own {
		return false
	}
	p := d.pubs[t.publisherID()]
	if p == nil {
		return false
	}
	return now-max(p.seen.Load(), p.since) >= max(int64(d.cfg.OfflineTTL), p.window.Load())
}
