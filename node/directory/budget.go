package directory

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	datastore "github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrBudget is returned by Put for a learned record that does not fit in
// Config.MaxLearnedBytes: making room for it would evict Things the
// operator values as much or more.
var ErrBudget = errors.New("over the node's budget for learned records")

// Value says how much the operator values a learned Thing; the budget
// (Config.MaxLearnedBytes) evicts the least valuable first. The bits are
// ordered: a Thing with a higher bit outranks every Thing without it.
type Value uint8

// The bits of a Value, least valuable first.
const (
	// ValueOnline: its publisher is online (connected, or seen within
	// Config.OfflineAfter).
	ValueOnline Value = 1 << iota
	// ValueUsed: the Thing was used within RecentUse (Use, or learned for
	// a lookup: Used).
	ValueUsed
	// ValueMember: the Thing is restricted to a group this node is in, or
	// its publisher is a member of one.
	ValueMember
	// ValueTrusted: the operator's trust list allows or prefers its
	// publisher.
	ValueTrusted
)

// RecentUse is how long after its last use a Thing counts as used
// (ValueUsed).
const RecentUse = time.Hour

// Valuer returns the Value of a publisher's learned Thing restricted to
// groups (nil if public), except ValueUsed, which the directory adds. It
// is called under the directory's locks and must not call the Directory.
type Valuer func(publisher peer.ID, groups []string) Value

// SetValuer sets how the budget values learned Things (nil: only
// ValueOnline, by Config.OfflineAfter, and ValueUsed). The node sets it
// once its trust list, group service and host exist.
func (d *Directory) SetValuer(v Valuer) {
	if v == nil {
		d.valuer.Store(nil)
		return
	}
	d.valuer.Store(&v)
}

// OnEvict sets fn to be called, after the write, with the Things that the
// budget evicted (as they were): a lookup that remembered having asked
// the network for their keys must ask again (node/federation). fn runs
// in the writer's goroutine and must not write to the Directory.
func (d *Directory) OnEvict(fn func([]Entry)) {
	if fn == nil {
		d.onEvict.Store(nil)
		return
	}
	d.onEvict.Store(&fn)
}

// PutOption qualifies the records of a Put or PutMany.
type PutOption func(*putItem)

// Used marks the records as learned for a use (a lookup that asked the
// network for them, a fetch): they count as used now (ValueUsed).
func Used() PutOption { return func(it *putItem) { it.used = true } }

// Use notes that the given Things were used now (returned by a lookup
// for a user, invoked): the budget keeps them before unused ones for
// RecentUse.
func (d *Directory) Use(entries ...Entry) {
	now := unixSec(d.now())
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, e := range entries {
		if t := d.find(e.Publisher, e.ThingID); t != nil {
			t.used.Store(now)
		}
	}
}

// LearnedBytes returns the bytes of the learned records held, what
// Config.MaxLearnedBytes bounds.
func (d *Directory) LearnedBytes() int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.learned
}

// value is the Value at now (Unix nanoseconds) of a learned Thing of
// publisher restricted to groups, last used at used (Unix seconds, 0:
// never). Callers hold mu or wmu.
func (d *Directory) value(publisher peer.ID, groups []string, used uint32, now int64) Value {
	var v Value
	if vp := d.valuer.Load(); vp != nil {
		v = (*vp)(publisher, groups) &^ ValueUsed
	}
	if p := d.pubs[publisher]; p != nil {
		if p.online(now, d.cfg.OfflineAfter) {
			v |= ValueOnline
		}
	}
	if used != 0 && now-int64(used)*int64(time.Second) < int64(RecentUse) {
		v |= ValueUsed
	}
	return v
}

// room is what the budget decided in the put being staged.
type room struct {
	// added is what the records accepted so far add to the learned bytes.
	added int64
	// evict are the things to evict, in order; gone marks them.
	evict []*thing
	gone  map[*thing]bool
	// sums are the stored summaries of evict (stageEvictions).
	sums []*summary
	// batch are the Things the put writes, never evicted by it.
	batch map[thingRef]bool
	// cands are the learned things by increasing value, then least
	// recently used; computed once per put, when first needed.
	cands []candidate
}

type candidate struct {
	t     *thing
	value Value
	used  uint32
}

// fits decides whether t (replacing old, nil if none), of value v, fits
// in the budget, evicting less valuable Things if needed: the least
// valuable first, and of equal value the least recently used. A Thing is
// only evicted for a more valuable one, so a record refused or evicted
// that arrives again (by gossip) displaces nothing of its own value:
// eviction cannot thrash. Callers hold wmu.
func (d *Directory) fits(t, old *thing, v Value, r *room, now int64) bool {
	if t.own || d.cfg.MaxLearnedBytes == 0 {
		return true
	}
	delta := int64(t.size)
	if old != nil {
		delta -= int64(old.size)
	}
	over := d.learned + r.added + delta - d.cfg.MaxLearnedBytes
	if delta <= 0 || over <= 0 {
		r.added += delta
		return true
	}
	if v == 0 {
		return false // nothing is less valuable: no need to look
	}
	if r.cands == nil {
		r.cands = d.candidates(now)
	}
	var pick []*thing
	for _, c := range r.cands {
		if over <= 0 || c.value >= v {
			break
		}
		if r.gone[c.t] || r.batch[thingRef{c.t.publisherID(), c.t.id}] {
			continue
		}
		pick = append(pick, c.t)
		over -= int64(c.t.size)
	}
	if over > 0 {
		return false
	}
	for _, x := range pick {
		r.gone[x] = true
		r.added -= int64(x.size)
	}
	r.evict = append(r.evict, pick...)
	r.added += delta
	return true
}

// budgeted gives op's new entry the use clock of the Thing it replaces
// (old, nil if none), notes the use of a record learned for one (Used),
// and reports whether it fits in the budget (fits). A record seen again
// changes no size and always fits. Callers hold wmu.
func (d *Directory) budgeted(op *putOp, it putItem, old *thing, r *room, now time.Time) bool {
	if old != nil && op.env != nil {
		op.t.used.Store(old.used.Load()) // and a later Use of old: swap
	}
	if it.used {
		op.t.used.Store(unixSec(now))
	}
	if op.env == nil {
		return true
	}
	n := now.UnixNano()
	v := d.value(op.t.publisherID(), op.env.Summary.Groups, op.t.used.Load(), n)
	return d.fits(op.t, old, v, r, n)
}

// candidates returns the learned things in eviction order. Callers hold
// wmu.
func (d *Directory) candidates(now int64) []candidate {
	var out []candidate
	for t := range d.byID.all() {
		if !t.own {
			u := t.used.Load()
			out = append(out, candidate{t: t, value: d.value(t.publisherID(), t.groups(), u, now), used: u})
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.value, b.value), cmp.Compare(a.used, b.used), cmp.Compare(a.t.modified, b.t.modified))
	})
	return out
}

// trim evicts learned things, least valuable first, until they fit in the
// budget: after Open, when the budget was lowered since they were
// stored. Callers hold wmu (or own the directory, as Open does).
func (d *Directory) trim() error {
	over := d.learned - d.cfg.MaxLearnedBytes
	if d.cfg.MaxLearnedBytes == 0 || over <= 0 {
		return nil
	}
	var victims []*thing
	for _, c := range d.candidates(d.now().UnixNano()) {
		if over <= 0 {
			break
		}
		victims = append(victims, c.t)
		over -= int64(c.t.size)
	}
	d.log.Info("directory: evicting learned records over the budget", "evicted", len(victims), "budget", d.cfg.MaxLearnedBytes)
	return d.remove(victims)
}

// newRoom starts the budget's decisions for a put of items.
func newRoom(items []putItem) *room {
	r := &room{gone: make(map[*thing]bool), batch: make(map[thingRef]bool, len(items))}
	for _, it := range items {
		r.batch[thingRef{it.rec.Publisher(), it.rec.ThingID}] = true
	}
	return r
}

// stageEvictions adds the deletion of the evicted things to batch, and
// reads their summaries first (room.sums).
func (d *Directory) stageEvictions(ctx context.Context, batch datastore.Batch, r *room) error {
	r.sums = d.summaries(r.evict)
	for _, t := range r.evict {
		if err := batch.Delete(ctx, d.thingKey(t.publisherID(), t.id)); err != nil {
			return err
		}
	}
	return nil
}

// evicted drops the evicted things, whose summaries are sums, from
// memory (callers hold mu for writing) and returns their entries as they
// were.
func (d *Directory) evicted(things []*thing, sums []*summary) []Entry {
	out := make([]Entry, 0, len(things))
	for i, t := range things {
		out = append(out, d.entryWith(t, 0, d.summaryDetails(sums[i])))
		d.drop(t, sums[i])
	}
	return out
}

// announceEvicted tells subscribers (thing_deleted) and the OnEvict hook
// what the budget evicted.
func (d *Directory) announceEvicted(gone []Entry) {
	if len(gone) == 0 {
		return
	}
	for _, e := range gone {
		if !e.Tombstone {
			e.Tombstone = true
			d.events.emit(EventDeleted, e, nil)
		}
	}
	d.log.Debug("directory: evicted learned records over the budget", "evicted", len(gone), "budget", d.cfg.MaxLearnedBytes)
	if fn := d.onEvict.Load(); fn != nil {
		(*fn)(gone)
	}
}
