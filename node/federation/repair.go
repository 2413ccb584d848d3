package federation

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Repair: gossip loses messages (a peer's outbound queue full on a busy
// node, a mesh not yet formed when a record was announced), and gossipsub
// repairs a loss only for the few heartbeats its message cache remembers.
// A node that holds everything it hears (roles directory and v1) would
// miss a lost record until the next republication, a day later. So each
// presence beat carries its author's digest — how many live public Things
// it publishes, and the XOR of their directory.ThingDigest — and such a
// node compares it with what it holds of the author (directory.Holding).
// When two beats in a row differ from it (so that records still on their
// way are not counted as lost), it syncs with the author. A mismatch that
// a sync does not mend (the author's Things over this node's quota or
// budget, or more than a sync carries) must not cost a sync every other
// beat: after each repair the next waits twice as long, from two beat
// intervals up to maxRepairWait; a beat that matches resets the wait. A
// light node holds only part of its shards (short announcements are
// fetched on demand) and does not compare.
const (
	// maxRepairWait is, in presence intervals, the longest wait between
	// two repairs from one publisher (an hour by default).
	maxRepairWait = 64
	// maxRepairs bounds the publishers with a mismatch noted or a repair
	// waiting.
	maxRepairs = 1024
)

// repairWait is when a publisher was last repaired from, and how long the
// next repair from it waits after that.
type repairWait struct {
	last time.Time
	wait time.Duration
}

// repairs is what the node noted of beats that differ from what it holds.
type repairs struct {
	mu sync.Mutex
	// odd is, per publisher, the time (its own) of a beat whose digest
	// differed from what the node held.
	odd map[peer.ID]time.Time
	// done is, per publisher, when it was last repaired from and the
	// wait before the next repair.
	done map[peer.ID]repairWait
	// queue takes the publishers to sync with.
	queue chan peer.ID
}

// holdsAll reports whether the node holds every public Thing it hears of:
// only such a node compares digests.
func (f *Federation) holdsAll() bool {
	return f.role() == RoleDirectory || f.role() == RoleV1
}

// digest is how a beat writes a directory digest: 16 lowercase hex digits.
func digest(sum uint64) string { return fmt.Sprintf("%016x", sum) }

// compareBeat notes a beat of author that carries a digest, from a
// validator (it does not block): a second one in a row that differs from
// what the node holds queues a repair.
func (f *Federation) compareBeat(author peer.ID, beat presence) {
	if !f.holdsAll() || beat.Digest == "" || f.intake.Admits(author) != nil {
		return
	}
	sum, err := strconv.ParseUint(beat.Digest, 16, 64)
	if err != nil || len(beat.Digest) != 16 {
		return // liberal: a beat with a malformed digest is still a beat
	}
	live, held := f.dir.Holding(author)
	r := &f.repairs
	r.mu.Lock()
	defer r.mu.Unlock()
	if live == beat.Things && held == sum {
		delete(r.odd, author)
		delete(r.done, author)
		return
	}
	first, noted := r.odd[author]
	if !noted {
		if len(r.odd) < maxRepairs {
			r.odd[author] = beat.At
		}
		return
	}
	if !beat.At.After(first) {
		return // the same beat on another topic
	}
	delete(r.odd, author)
	now := f.now()
	prev, ok := r.done[author]
	if ok && now.Sub(prev.last) < prev.wait || !ok && len(r.done) >= maxRepairs {
		return
	}
	select {
	case r.queue <- author:
		wait := min(max(2*prev.wait, 2*f.cfg.PresenceInterval), maxRepairWait*f.cfg.PresenceInterval)
		r.done[author] = repairWait{last: now, wait: wait}
	default:
	}
}

// repairLoop syncs with each publisher compareBeat queued.
func (f *Federation) repairLoop() {
	r := &f.repairs
	for {
		select {
		case <-f.ctx.Done():
			return
		case p := <-r.queue:
			n, err := f.Sync(f.ctx, p, Filter{})
			switch {
			case err != nil && f.ctx.Err() == nil:
				// Info, not debug: a repair that fails leaves records
				// missing, and the backoff bounds these lines.
				f.log.Info("repair from publisher failed", "publisher", p, "err", err)
			case err == nil:
				f.log.Info("repaired from publisher", "publisher", p, "changed", n)
			}
			r.prune(f.now(), maxRepairWait*f.cfg.PresenceInterval)
		}
	}
}

// prune forgets the repairs, and the mismatches noted, older than the
// longest wait.
func (r *repairs) prune(now time.Time, longest time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, w := range r.done {
		if now.Sub(w.last) >= longest {
			delete(r.done, p)
		}
	}
	for p, at := range r.odd {
		if now.Sub(at) >= longest {
			delete(r.odd, p)
		}
	}
}
