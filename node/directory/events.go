package directory

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// EventType is the kind of an Event. The first three are the event types of
// the W3C WoT Discovery directory API.
type EventType string

const (
	// EventCreated: a Thing appeared (first seen, or seen again after its
	// tombstone).
	EventCreated EventType = "thing_created"
	// EventUpdated: a newer version replaced a Thing.
	EventUpdated EventType = "thing_updated"
	// EventDeleted: a Thing was removed by its tombstone or expired.
	EventDeleted EventType = "thing_deleted"
	// EventOverflow is the last event of a subscriber that fell more than
	// Config.SubscriberBuffer events behind; its channel is closed right
	// after. It carries the ID of the last event delivered before it, so the
	// subscriber can resubscribe from there.
	EventOverflow EventType = "overflow"
)

// Event is a change of the directory.
type Event struct {
	// ID orders the events of one run of the directory:
	// "<run>-<number>", numbers increasing by one. An overflow event
	// repeats the ID of the event before it.
	ID        string
	Type      EventType
	Publisher peer.ID
	ThingID   string
	// Entry is the Thing after the change. For thing_deleted it describes
	// the Thing as it was, with Tombstone set; its record is the tombstone,
	// or none once the Thing expired. Entry is zero in an overflow event.
	Entry Entry
	// Previous is the signed record a thing_updated replaced, exactly as
	// it was stored; nil for the other types (and if it could not be
	// read). It lets a consumer compute what changed.
	//
	// The history a subscriber resumes from keeps the records of its
	// newest events only, up to maxHistoryRecordBytes: a replayed older
	// event has no Previous and its Entry reads the record held now.
	Previous []byte
}

// maxHistoryRecordBytes bounds the records (signed bytes, parsed TDs and
// replaced records) that the event history keeps for replay: a thousand
// events of 60 KB TDs would otherwise hold twice the bytes of the
// directory's records (issue 24). Live subscribers get every event's
// record.
const maxHistoryRecordBytes = 4 << 20

// recordCost is what an event's records cost in memory: the signed bytes,
// the parsed TD (about as large) and the replaced record.
func (e *Event) recordCost() int {
	n := len(e.Previous)
	if e.Entry.rec != nil {
		n += 2 * len(e.Entry.rec.Raw)
	}
	return n
}

var (
	// ErrEventsLost is returned by Subscribe when the events after the
	// given ID are no longer held (too old, or from an earlier run): the
	// subscriber must reread the directory.
	ErrEventsLost = errors.New("directory: events after this id are no longer held")
	// ErrEventID is returned by Subscribe for an ID that this directory
	// never issued.
	ErrEventID = errors.New("directory: not an event id of this directory")
)

// notify emits the event of a put's change, if consumers see one.
func (d *Directory) notify(op putOp) {
	switch op.change {
	case Created:
		e := d.entry(op.t, 0)
		e.rec = op.rec
		d.events.emit(EventCreated, e, nil)
	case Updated:
		e := d.entry(op.t, 0)
		e.rec = op.rec
		d.events.emit(EventUpdated, e, op.prev)
	case Deleted:
		if op.old == nil || op.old.tombstone {
			return // nothing visible went away
		}
		e := d.entryWith(op.old, 0, d.summaryDetails(op.oldSum))
		e.Tombstone, e.Seq, e.Signed, e.Modified, e.rec = true, op.t.seq, fromUnixNano(op.t.signed), fromUnixSec(op.t.modified), op.rec
		d.events.emit(EventDeleted, e, nil)
	}
}

// Subscribe returns the directory's events after lastEventID ("" for only
// new ones) on a channel, and a cancel function that ends the subscription
// and closes the channel. The channel is also closed by Close, and after an
// EventOverflow when the subscriber falls behind: it never blocks writers.
// An ID whose successors are no longer held gives ErrEventsLost.
func (d *Directory) Subscribe(lastEventID string) (<-chan Event, func(), error) {
	return d.events.subscribe(lastEventID)
}

// events is the ring of recent events and the set of subscribers.
type events struct {
	mu   sync.Mutex
	run  string // this run's ID prefix
	next uint64 // number of the next event
	ring []Event
	head int // index of the oldest event in ring
	n    int // events in ring
	// recBytes is the recordCost of the events in ring; stripped is how
	// many of the oldest events in ring have had their records dropped.
	recBytes int
	stripped int
	buffer   int
	subs     map[*subscriber]struct{}
	closed   bool
}

type subscriber struct {
	ch chan Event
}

func newEvents(history, buffer int) *events {
	return &events{
		run:    strconv.FormatInt(time.Now().UnixNano(), 36),
		next:   1,
		ring:   make([]Event, history),
		buffer: buffer,
		subs:   make(map[*subscriber]struct{}),
	}
}

func (ev *events) id(n uint64) string { return ev.run + "-" + strconv.FormatUint(n, 10) }

// Revision is the ID of the directory's latest event ("<run>-0" before the
// first): it changes whenever a Thing is created, updated or deleted, so it
// tags a state of the directory (e.g. an HTTP etag of a listing).
func (d *Directory) Revision() string {
	d.events.mu.Lock()
	defer d.events.mu.Unlock()
	return d.events.id(d.events.next - 1)
}

// emit records an event and hands it to every subscriber; one that has no
// room left gets an overflow event and is dropped.
func (ev *events) emit(typ EventType, e Entry, prev []byte) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.closed {
		return
	}
	last := ev.id(ev.next - 1)
	event := Event{ID: ev.id(ev.next), Type: typ, Publisher: e.Publisher, ThingID: e.ThingID, Entry: e, Previous: prev}
	ev.next++
	ev.keep(event)
	for s := range ev.subs {
		// One slot stays free for the overflow event.
		if len(s.ch) < cap(s.ch)-1 {
			s.ch <- event
			continue
		}
		s.ch <- Event{ID: last, Type: EventOverflow}
		close(s.ch)
		delete(ev.subs, s)
	}
}

// keep adds event to the history ring, dropping the oldest event when it
// is full and the records of the oldest events that have them while the
// ring's records cost more than maxHistoryRecordBytes. Callers hold mu.
func (ev *events) keep(event Event) {
	if len(ev.ring) == 0 {
		return
	}
	if ev.n == len(ev.ring) {
		ev.recBytes -= ev.ring[ev.head].recordCost()
		ev.ring[ev.head] = Event{}
		ev.head = (ev.head + 1) % len(ev.ring)
		ev.n--
		ev.stripped = max(0, ev.stripped-1)
	}
	ev.ring[(ev.head+ev.n)%len(ev.ring)] = event
	ev.n++
	ev.recBytes += event.recordCost()
	for ev.recBytes > maxHistoryRecordBytes && ev.stripped < ev.n-1 {
		old := &ev.ring[(ev.head+ev.stripped)%len(ev.ring)]
		ev.recBytes -= old.recordCost()
		old.Entry.rec, old.Previous = nil, nil
		ev.stripped++
	}
}

func (ev *events) subscribe(lastEventID string) (<-chan Event, func(), error) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.closed {
		return nil, nil, ErrClosed
	}
	var replay []Event
	if lastEventID != "" {
		n, err := ev.parse(lastEventID)
		if err != nil {
			return nil, nil, err
		}
		oldest := ev.next - uint64(ev.n) // number of the oldest event held
		if n+1 < oldest {
			return nil, nil, fmt.Errorf("subscribe after %q: oldest event held is %q: %w", lastEventID, ev.id(oldest), ErrEventsLost)
		}
		for i := int(n + 1 - oldest); i < ev.n; i++ {
			replay = append(replay, ev.ring[(ev.head+i)%len(ev.ring)])
		}
	}
	s := &subscriber{ch: make(chan Event, ev.buffer+len(replay)+1)}
	for _, e := range replay {
		s.ch <- e
	}
	ev.subs[s] = struct{}{}
	cancel := func() {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		if _, ok := ev.subs[s]; ok {
			delete(ev.subs, s)
			close(s.ch)
		}
	}
	return s.ch, cancel, nil
}

// parse returns the number of an event ID of this run.
func (ev *events) parse(id string) (uint64, error) {
	run, num, ok := strings.Cut(id, "-")
	n, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil || run == "" {
		return 0, fmt.Errorf("subscribe after %q: want <run>-<number>: %w", id, ErrEventID)
	}
	if run != ev.run {
		return 0, fmt.Errorf("subscribe after %q: from another run of the directory: %w", id, ErrEventsLost)
	}
	if n >= ev.next {
		return 0, fmt.Errorf("subscribe after %q: the last event is %q: %w", id, ev.id(ev.next-1), ErrEventID)
	}
	return n, nil
}

// close ends every subscription.
func (ev *events) close() {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.closed = true
	for s := range ev.subs {
		close(s.ch)
		delete(ev.subs, s)
	}
}
