package federation

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// learnQueue takes the announcements the topic validator accepts and
// stores them in the directory after the validator has returned, so that
// gossipsub forwards a record as soon as it is known to be valid and new,
// not after this node has written and indexed it. It holds at most one
// record per Thing, the newest; a worker (run) stores what it holds in
// one batch (Intake.StoreMany) whenever it is woken.
//
// A record is in the queue or in the directory at every moment, and never
// counted in both (the worker stores and drops it under the queue's
// lock), so the validator
// decides against the newest record this node has accepted: one older
// than that is a replay, one no newer a duplicate. The publisher's quota
// is checked against what the directory holds plus what is queued.
type learnQueue struct {
	intake *Intake
	dir    *directory.Directory
	log    *slog.Logger
	wake   chan struct{}

	mu      sync.Mutex
	pending map[thingRef]queued
	// usage is, per publisher, what its queued records add to what the
	// directory holds of it.
	usage map[peer.ID]directory.Delta
}

// queued is a record in the queue and what it adds to its publisher's
// usage.
type queued struct {
	rec   *lmosproto.Record
	usage directory.Delta
}

// thingRef names one Thing of one publisher.
type thingRef struct {
	publisher peer.ID
	id        string
}

func newLearnQueue(in *Intake, dir *directory.Directory, log *slog.Logger) *learnQueue {
	return &learnQueue{intake: in, dir: dir, log: log, wake: make(chan struct{}, 1), pending: make(map[thingRef]queued), usage: make(map[peer.ID]directory.Delta)}
}

// admit decides on rec, a checked record of another publisher, and queues
// it to be stored. It returns nil for a record to accept, an error
// wrapping errReplay for one older than the newest accepted (reject),
// ErrNotNewer for a duplicate (ignore), directory.ErrQuota for one over
// its publisher's quota (reject).
func (q *learnQueue) admit(rec *lmosproto.Record) error {
	ref := thingRef{rec.Publisher(), rec.ThingID}
	q.mu.Lock()
	defer q.mu.Unlock()
	prev, queuedBefore := q.pending[ref]
	if queuedBefore {
		switch held := prev.rec; {
		case rec.Seq < held.Seq:
			return fmt.Errorf("thing %q of %s: seq %d, accepted %d: %w", rec.ThingID, ref.publisher, rec.Seq, held.Seq, errReplay)
		case bytes.Equal(rec.Raw, held.Raw):
			return fmt.Errorf("thing %q of %s: seq %d: %w", rec.ThingID, ref.publisher, rec.Seq, errSame)
		case !rec.Newer(held):
			return fmt.Errorf("thing %q of %s: seq %d: %w", rec.ThingID, ref.publisher, rec.Seq, ErrNotNewer)
		}
	}
	// What the publisher's other queued records add: rec replaces prev.
	others := q.usage[ref.publisher]
	others.Things -= prev.usage.Things
	others.Bytes -= prev.usage.Bytes
	change, add, err := q.dir.Classify(rec, others)
	if err != nil {
		return fmt.Errorf("thing %q of %s: %w", rec.ThingID, ref.publisher, err)
	}
	switch change {
	case directory.Stale:
		if held, ok := q.dir.Latest(ref.publisher, rec.ThingID); ok && rec.Seq < held.Seq {
			return fmt.Errorf("thing %q of %s: seq %d, held %d: %w", rec.ThingID, ref.publisher, rec.Seq, held.Seq, errReplay)
		}
		return fmt.Errorf("thing %q of %s: seq %d: %w", rec.ThingID, ref.publisher, rec.Seq, ErrNotNewer)
	case directory.OverQuota:
		things, bytes := q.dir.Usage(ref.publisher)
		return fmt.Errorf("thing %q of %s (%d bytes): the publisher holds %d Things, %d bytes here, %d more accepted: %w",
			rec.ThingID, ref.publisher, len(rec.Raw), things, bytes, others.Things, directory.ErrQuota)
	}
	q.pending[ref] = queued{rec: rec, usage: add}
	others.Things += add.Things
	others.Bytes += add.Bytes
	q.usage[ref.publisher] = others
	select {
	case q.wake <- struct{}{}:
	default:
	}
	if change == directory.Unchanged {
		// The record held, again: storing it refreshes its expiry, as
		// any path that brings it does; not news to forward.
		return fmt.Errorf("thing %q of %s: seq %d: %w", rec.ThingID, ref.publisher, rec.Seq, errSame)
	}
	return nil
}

// errSame: the record is the one held or accepted, byte for byte (it
// wraps ErrNotNewer).
var errSame = fmt.Errorf("the record held, again: %w", ErrNotNewer)

// run stores what is queued whenever admit wakes it, until done closes.
// What is still queued then is dropped: learned records are soft state,
// which sync and republication bring back.
func (q *learnQueue) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-q.wake:
			q.flush()
		}
	}
}

// flush stores every queued record in one batch. It holds mu while it
// stores: a stored record counts in the directory's usage of its
// publisher from the moment the directory applies it, and in the queue's
// until it is dropped from the queue, so admit, deciding in between,
// would count it twice and refuse a record within its publisher's quota
// as over it (a refusal that costs the sender, and the record is lost:
// gossipsub has marked it seen). Validators wait for one batch at most.
func (q *learnQueue) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return
	}
	recs := make([]*lmosproto.Record, 0, len(q.pending))
	for _, p := range q.pending {
		recs = append(recs, p.rec)
	}
	if _, err := q.intake.StoreMany(recs); err != nil && !errors.Is(err, directory.ErrClosed) {
		q.log.Warn("store learned records", "records", len(recs), "err", err)
	}
	clear(q.pending)
	clear(q.usage)
}
