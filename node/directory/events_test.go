package directory

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// recv returns the next event, failing the test if none comes.
func recv(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("channel closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return Event{}
}

// isClosed reports whether ch is closed with nothing left in it.
func isClosed(t *testing.T, ch <-chan Event) bool {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func TestEvents(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	d := open(t, memStore(), self.id, newClock(), Config{})
	ch, cancel, err := d.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	v1 := other.sign(t, thingSpec{id: thingID, title: "One", seq: 1}, t0)
	v2 := other.sign(t, thingSpec{id: thingID, title: "Two", seq: 2, groups: []string{"g1"}}, t0)
	mustPut(t, d, v1, nil, Created)
	mustPut(t, d, v1, nil, Unchanged) // no event
	mustPut(t, d, v2, nil, Updated)
	mustPut(t, d, other.tombstone(t, thingID, 3, t0), nil, Deleted)
	mustPut(t, d, other.tombstone(t, "urn:never-seen", 1, t0), nil, Deleted) // nothing visible: no event

	want := []struct {
		typ   EventType
		title string
	}{{EventCreated, "One"}, {EventUpdated, "Two"}, {EventDeleted, "Two"}}
	var ids []string
	for i, w := range want {
		ev := recv(t, ch)
		if ev.Type != w.typ || ev.Publisher != other.id || ev.ThingID != thingID || ev.Entry.Title != w.title {
			t.Fatalf("event %d: %+v, want %s of %q", i, ev, w.typ, w.title)
		}
		ids = append(ids, ev.ID)
		rec, err := ev.Entry.Record()
		if err != nil {
			t.Fatal(err)
		}
		if rec.Seq != uint64(i+1) || rec.Tombstone() != (w.typ == EventDeleted) {
			t.Fatalf("event %d carries record seq %d", i, rec.Seq)
		}
		// Previous: the replaced record on an update only.
		if wantPrev := w.typ == EventUpdated; wantPrev != (ev.Previous != nil) || (wantPrev && !bytes.Equal(ev.Previous, v1.Raw)) {
			t.Fatalf("event %d (%s): Previous %q, want the replaced record: %v", i, ev.Type, ev.Previous, wantPrev)
		}
	}
	if len(ch) != 0 {
		t.Fatalf("%d unexpected events", len(ch))
	}
	run, _, _ := strings.Cut(ids[0], "-")
	for i, id := range ids {
		if id != fmt.Sprintf("%s-%d", run, i+1) {
			t.Fatalf("ids %v", ids)
		}
	}
}

// TestEventDeletedKeepsGroups: the deleted event describes the Thing that
// went, so a group-aware consumer can tell who may learn of it.
func TestEventDeletedKeepsGroups(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	d := open(t, memStore(), self.id, newClock(), Config{})
	mustPut(t, d, other.sign(t, thingSpec{id: thingID, title: "Secret", seq: 1, groups: []string{"g1"}}, t0), nil, Created)
	ch, cancel, _ := d.Subscribe("")
	defer cancel()
	mustPut(t, d, other.tombstone(t, thingID, 2, t0), nil, Deleted)
	ev := recv(t, ch)
	if ev.Type != EventDeleted || !ev.Entry.Tombstone || ev.Entry.Seq != 2 || !slices.Equal(ev.Entry.Groups, []string{"g1"}) || ev.Entry.Title != "Secret" {
		t.Fatalf("deleted event %+v", ev)
	}
}

func TestEventsResume(t *testing.T) {
	self := newPublisher(t, 1)
	d := open(t, memStore(), self.id, newClock(), Config{EventHistory: 3})
	ch, cancel, _ := d.Subscribe("")
	defer cancel()
	var ids []string
	for i := range 4 {
		mustPut(t, d, self.sign(t, thingSpec{id: fmt.Sprintf("urn:%d", i), seq: 1}, t0), nil, Created)
		ids = append(ids, recv(t, ch).ID)
	}
	// The ring holds events 2..4: resuming after 1 replays them.
	for after, want := range map[string][]string{ids[0]: ids[1:], ids[2]: ids[3:], ids[3]: nil} {
		rch, rcancel, err := d.Subscribe(after)
		if err != nil {
			t.Fatalf("resume after %s: %v", after, err)
		}
		var got []string
		for range want {
			got = append(got, recv(t, rch).ID)
		}
		if !slices.Equal(got, want) || len(rch) != 0 {
			t.Fatalf("resume after %s: %v (+%d), want %v", after, got, len(rch), want)
		}
		rcancel()
		if !isClosed(t, rch) {
			t.Fatal("cancel did not close the channel")
		}
		rcancel() // idempotent
	}
	run, _, _ := strings.Cut(ids[0], "-")
	for id, want := range map[string]error{
		run + "-0":   ErrEventsLost, // event 1 is gone
		"x1-1":       ErrEventsLost, // another run
		run + "-99":  ErrEventID,
		"garbage":    ErrEventID,
		run + "-":    ErrEventID,
		"-3":         ErrEventID,
		run + "-1-2": ErrEventID,
	} {
		if _, _, err := d.Subscribe(id); !errors.Is(err, want) {
			t.Errorf("Subscribe(%q): %v, want %v", id, err, want)
		}
	}
}

func TestEventsLiveAfterReplay(t *testing.T) {
	self := newPublisher(t, 1)
	d := open(t, memStore(), self.id, newClock(), Config{})
	ch, cancel, _ := d.Subscribe("")
	defer cancel()
	mustPut(t, d, self.sign(t, thingSpec{id: "urn:1", seq: 1}, t0), nil, Created)
	first := recv(t, ch)
	mustPut(t, d, self.sign(t, thingSpec{id: "urn:2", seq: 1}, t0), nil, Created)
	rch, rcancel, err := d.Subscribe(first.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rcancel()
	mustPut(t, d, self.sign(t, thingSpec{id: "urn:3", seq: 1}, t0), nil, Created)
	if a, b := recv(t, rch), recv(t, rch); a.ThingID != "urn:2" || b.ThingID != "urn:3" {
		t.Fatalf("replay then live: %s, %s", a.ThingID, b.ThingID)
	}
}

func TestSlowSubscriberIsDropped(t *testing.T) {
	self := newPublisher(t, 1)
	d := open(t, memStore(), self.id, newClock(), Config{SubscriberBuffer: 2})
	slow, cancel, _ := d.Subscribe("")
	defer cancel()
	fast, fcancel, _ := d.Subscribe("")
	defer fcancel()
	var ids []string
	for i := range 5 {
		// Put never waits for the slow subscriber. The fast one reads
		// each event before the next Put (a goroutine reading it could
		// fall two behind on a busy machine and be dropped too).
		mustPut(t, d, self.sign(t, thingSpec{id: fmt.Sprintf("urn:%d", i), seq: 1}, t0), nil, Created)
		ev := recv(t, fast)
		if ev.Type == EventOverflow {
			t.Fatalf("the fast subscriber was dropped after %q", ev.ID)
		}
		ids = append(ids, ev.ID)
	}
	a, b, over := recv(t, slow), recv(t, slow), recv(t, slow)
	if a.ID != ids[0] || b.ID != ids[1] || over.Type != EventOverflow || over.ID != ids[1] {
		t.Fatalf("slow subscriber got %s %s %+v", a.ID, b.ID, over)
	}
	if !isClosed(t, slow) {
		t.Fatal("slow subscriber's channel not closed")
	}
	cancel() // after the drop: harmless
	// It resumes from the overflow's ID.
	again, acancel, err := d.Subscribe(over.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer acancel()
	for _, want := range ids[2:] {
		if ev := recv(t, again); ev.ID != want {
			t.Fatalf("resumed at %s, want %s", ev.ID, want)
		}
	}
}

func TestCloseEndsSubscriptions(t *testing.T) {
	self := newPublisher(t, 1)
	d := open(t, memStore(), self.id, newClock(), Config{})
	ch, cancel, _ := d.Subscribe("")
	d.Close()
	if !isClosed(t, ch) {
		t.Fatal("Close left a subscription open")
	}
	cancel()
}

// TestRevision: the revision changes with every event and only then.
func TestRevision(t *testing.T) {
	self, other := newPublisher(t, 1), newPublisher(t, 2)
	d := open(t, memStore(), self.id, newClock(), Config{})
	r0 := d.Revision()
	v1 := other.sign(t, thingSpec{id: thingID, title: "One", seq: 1}, t0)
	mustPut(t, d, v1, nil, Created)
	r1 := d.Revision()
	mustPut(t, d, v1, nil, Unchanged)
	if r1 == r0 || d.Revision() != r1 {
		t.Fatalf("revisions %q, %q, %q: want a change on creation only", r0, r1, d.Revision())
	}
	mustPut(t, d, other.tombstone(t, thingID, 2, t0), nil, Deleted)
	if d.Revision() == r1 {
		t.Fatalf("revision %q unchanged by a deletion", r1)
	}
}

// TestHistoryRecordBytes: the event history keeps the records of its
// newest events only, up to maxHistoryRecordBytes; a replayed older event
// reads its record from the directory.
func TestHistoryRecordBytes(t *testing.T) {
	d := open(t, memStore(), newPublisher(t, 1).id, newClock(), Config{})
	pub := newPublisher(t, 2)
	first, _, err := d.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	big := func(i int) *lmosproto.Record {
		return pub.unsigned(t, thingSpec{id: fmt.Sprintf("urn:big:%d", i), description: strings.Repeat("s", 60_000), seq: 1}.td(t), t0)
	}
	mustPut(t, d, big(0), nil, Created)
	ev0 := <-first
	n := 2 * maxHistoryRecordBytes / 60_000
	for i := 1; i < n; i++ {
		mustPut(t, d, big(i), nil, Created)
	}
	d.events.mu.Lock()
	cost, stripped := d.events.recBytes, d.events.stripped
	d.events.mu.Unlock()
	if cost > maxHistoryRecordBytes || stripped == 0 {
		t.Fatalf("history holds %d bytes of records (limit %d), %d events stripped", cost, maxHistoryRecordBytes, stripped)
	}
	replay, cancel, err := d.Subscribe(ev0.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	ev := <-replay
	if ev.Entry.rec != nil {
		t.Fatal("the oldest replayed event still holds its record")
	}
	if raw, err := ev.Entry.Raw(); err != nil || len(raw) < 60_000 {
		t.Fatalf("replayed event's record: %d bytes, %v", len(raw), err)
	}
}
