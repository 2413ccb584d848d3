package federation

import (
	"bytes"
	"errors"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func message(author, from peer.ID, data []byte) *pubsub.Message {
	topic := lmosproto.TopicAnnounce
	return &pubsub.Message{
		Message:      &pubsubpb.Message{Data: data, From: []byte(author), Topic: &topic},
		ReceivedFrom: from,
	}
}

// TestAnnounceValidator runs the announce validator's decisions in order
// on one directory: each step sees what the steps before it accepted and
// the learn queue stored.
func TestAnnounceValidator(t *testing.T) {
	self := newMember(t, nil)
	alice := newMember(t, nil) // a publisher
	relay := newMember(t, nil) // an honest peer forwarding Alice's announcements
	id := uniqueID()
	now := self.clock.Now()
	v1 := sign(t, alice.key, testTD(t, id, 1, "a"), now)
	v2 := sign(t, alice.key, testTD(t, id, 2, "a"), now)
	v2early := sign(t, alice.key, testTD(t, id, 2, "a"), now.Add(-time.Minute))
	v3 := sign(t, alice.key, testTD(t, id, 3, "a"), now)
	forged := bytes.Replace(v3.Raw, []byte(`"Test `), []byte(`"Evil `), 1)
	expired := sign(t, alice.key, testTD(t, uniqueID(), 1, "a"), now.Add(-lmosdht.MaxRecordAge-time.Minute))
	future := sign(t, alice.key, testTD(t, uniqueID(), 1, "a"), now.Add(lmosdht.MaxClockSkew+time.Minute))
	own := sign(t, self.key, testTD(t, uniqueID(), 1, "a"), now)
	tomb, err := lmosproto.SignTombstone(id, 4, alice.key, now)
	if err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct {
		name   string
		msg    *pubsub.Message
		want   pubsub.ValidationResult
		is     error // the error wraps it, if set
		heldAt uint64
	}{
		{"new version", message(alice.id, relay.id, v2.Raw), pubsub.ValidationAccept, nil, 2},
		{"same record again", message(alice.id, relay.id, v2.Raw), pubsub.ValidationIgnore, ErrNotNewer, 2},
		{"same seq, signed earlier", message(alice.id, relay.id, v2early.Raw), pubsub.ValidationIgnore, ErrNotNewer, 2},
		{"replay of a lower seq", message(alice.id, relay.id, v1.Raw), pubsub.ValidationReject, errReplay, 2},
		{"bad signature", message(alice.id, relay.id, forged), pubsub.ValidationReject, lmosdht.ErrBadRecord, 2},
		{"author is not the publisher", message(relay.id, relay.id, v3.Raw), pubsub.ValidationReject, errNotAuthor, 2},
		{"oversized", message(alice.id, relay.id, make([]byte, lmosproto.MaxRecordSize+1)), pubsub.ValidationReject, lmosdht.ErrTooLarge, 2},
		{"not JSON", message(alice.id, relay.id, []byte("\x00\x01")), pubsub.ValidationReject, lmosdht.ErrBadRecord, 2},
		{"no id", message(alice.id, relay.id, []byte(`{"title":"x"}`)), pubsub.ValidationReject, lmosdht.ErrBadRecord, 2},
		{"expired", message(alice.id, relay.id, expired.Raw), pubsub.ValidationReject, lmosdht.ErrExpired, 2},
		{"dated in the future", message(alice.id, relay.id, future.Raw), pubsub.ValidationReject, lmosdht.ErrFuture, 2},
		{"own record from a peer", message(self.id, relay.id, own.Raw), pubsub.ValidationIgnore, nil, 2},
		{"own record published locally", message(self.id, self.id, own.Raw), pubsub.ValidationAccept, nil, 2},
		{"next version", message(alice.id, alice.id, v3.Raw), pubsub.ValidationAccept, nil, 3},
		{"tombstone", message(alice.id, relay.id, tomb.Raw), pubsub.ValidationAccept, nil, 4},
		{"an older version after the tombstone", message(alice.id, relay.id, v3.Raw), pubsub.ValidationReject, errReplay, 4},
	} {
		got, err := self.checkAnnounce(step.msg)
		self.learn.flush() // what the learn queue's worker does next
		if got != step.want {
			t.Errorf("%s: %s (%v), want %s", step.name, topicval.ResultName(got), err, topicval.ResultName(step.want))
			continue
		}
		if step.is != nil && !errors.Is(err, step.is) {
			t.Errorf("%s: error %v does not wrap %v", step.name, err, step.is)
		}
		if held, ok := self.dir.Latest(alice.id, id); !ok || held.Seq != step.heldAt {
			t.Errorf("%s: directory holds seq %d (%v), want %d", step.name, held.Seq, ok, step.heldAt)
		}
	}
	if _, ok := self.dir.Latest(self.id, own.ThingID); ok {
		t.Error("the validator stored an own record; only Publish may")
	}
	if e, ok := self.dir.Latest(alice.id, id); !ok || !e.Tombstone {
		t.Error("the tombstone did not remove the Thing")
	}
}

// TestAnnounceQueued: the validator decides against the records it
// accepted and the learn queue has not stored yet as against those held.
func TestAnnounceQueued(t *testing.T) {
	self := newMember(t, nil)
	alice := newMember(t, nil)
	id := uniqueID()
	now := self.clock.Now()
	v1 := sign(t, alice.key, testTD(t, id, 1, "a"), now)
	v2 := sign(t, alice.key, testTD(t, id, 2, "a"), now)
	v3 := sign(t, alice.key, testTD(t, id, 3, "a"), now)
	for _, step := range []struct {
		name string
		raw  []byte
		want pubsub.ValidationResult
		is   error
	}{
		{"v2", v2.Raw, pubsub.ValidationAccept, nil},
		{"v1 while v2 is queued", v1.Raw, pubsub.ValidationReject, errReplay},
		{"v2 again while queued", v2.Raw, pubsub.ValidationIgnore, ErrNotNewer},
		{"v3 replaces v2 in the queue", v3.Raw, pubsub.ValidationAccept, nil},
		{"v2 while v3 is queued", v2.Raw, pubsub.ValidationReject, errReplay},
	} {
		got, err := self.checkAnnounce(message(alice.id, alice.id, step.raw))
		if got != step.want || (step.is != nil && !errors.Is(err, step.is)) {
			t.Errorf("%s: %s (%v), want %s (%v)", step.name, topicval.ResultName(got), err, topicval.ResultName(step.want), step.is)
		}
	}
	if _, ok := self.dir.Latest(alice.id, id); ok {
		t.Fatal("stored before the learn queue's worker ran")
	}
	self.learn.flush()
	if held, ok := self.dir.Latest(alice.id, id); !ok || held.Seq != 3 {
		t.Fatalf("held seq %d (%v) after the flush, want 3", held.Seq, ok)
	}
	if len(self.learn.pending) != 0 || len(self.learn.usage) != 0 {
		t.Fatalf("the queue keeps %d records, %d publishers' usage after the flush", len(self.learn.pending), len(self.learn.usage))
	}
}
