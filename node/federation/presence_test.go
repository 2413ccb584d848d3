package federation

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func beatMessage(author, from peer.ID, data string) *pubsub.Message {
	topic := lmosproto.TopicPresence
	return &pubsub.Message{
		Message:      &pubsubpb.Message{Data: []byte(data), From: []byte(author), Topic: &topic},
		ReceivedFrom: from,
	}
}

// TestPresenceValidator: what the presence validator answers, and that an
// accepted beat dates the sighting of its author at its own time.
func TestPresenceValidator(t *testing.T) {
	self := newMember(t, nil)
	alice := newMember(t, nil) // a publisher whose Thing self holds
	bob := newMember(t, nil)   // a peer self holds nothing of
	now := self.clock.Now()
	id := uniqueID()
	if _, err := self.dir.Put(sign(t, alice.key, testTD(t, id, 1, "a"), now.Add(-time.Hour)), nil); err != nil {
		t.Fatal(err)
	}
	beat := func(p peer.ID, at time.Time) string {
		return fmt.Sprintf(`{"peer":%q,"at":%q}`, p.String(), at.UTC().Format(time.RFC3339Nano))
	}
	for _, step := range []struct {
		name string
		msg  *pubsub.Message
		want pubsub.ValidationResult
		is   error
	}{
		{"oversized", beatMessage(alice.id, alice.id, beat(alice.id, now)+strings.Repeat(" ", MaxPresenceSize)), pubsub.ValidationReject, lmosdht.ErrTooLarge},
		{"not JSON", beatMessage(alice.id, alice.id, "beat"), pubsub.ValidationReject, nil},
		{"names another peer", beatMessage(bob.id, bob.id, beat(alice.id, now)), pubsub.ValidationReject, errNotAuthor},
		{"too old", beatMessage(alice.id, bob.id, beat(alice.id, now.Add(-MaxPresenceAge-time.Second))), pubsub.ValidationIgnore, errStaleBeat},
		{"from the future", beatMessage(alice.id, bob.id, beat(alice.id, now.Add(lmosdht.MaxClockSkew+time.Minute))), pubsub.ValidationIgnore, errStaleBeat},
		{"of a peer with no Thing held", beatMessage(bob.id, bob.id, beat(bob.id, now)), pubsub.ValidationIgnore, nil},
		{"own", beatMessage(self.id, self.id, beat(self.id, now)), pubsub.ValidationAccept, nil},
		{"relayed beat of a publisher", beatMessage(alice.id, bob.id, beat(alice.id, now.Add(-time.Minute))), pubsub.ValidationAccept, nil},
	} {
		got, err := self.checkPresence(step.msg)
		if got != step.want {
			t.Errorf("%s: %s (%v), want %s", step.name, topicval.ResultName(got), err, topicval.ResultName(step.want))
			continue
		}
		if step.is != nil && !errors.Is(err, step.is) {
			t.Errorf("%s: error %v does not wrap %v", step.name, err, step.is)
		}
	}
	e, _ := self.dir.Get(alice.id, id)
	if want := now.Add(-time.Minute); !e.LastSeen.Equal(want) || !e.Online {
		t.Errorf("after the beat: last seen %s, online %v; want %s, online", e.LastSeen, e.Online, want)
	}
}

// TestAnnounceOverQuota: an announcement that would take its publisher
// over the directory's quota is rejected (it counts against the sender);
// what is held stays, and an update of a held Thing is still accepted.
func TestAnnounceOverQuota(t *testing.T) {
	var dir *directory.Directory
	self := newMember(t, func(d *Deps, _ *Config) {
		var err error
		dir, err = directory.Open(directory.Deps{Datastore: dssync.MutexWrap(ds.NewMapDatastore()), Self: d.Host.ID()}, directory.Config{MaxThingsPerPublisher: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dir.Close() })
		d.Directory = dir
	})
	alice := newMember(t, nil)
	now := time.Now()
	ids := []string{uniqueID(), uniqueID(), uniqueID()}
	for i, step := range []struct {
		rec  *lmosproto.Record
		want pubsub.ValidationResult
	}{
		{sign(t, alice.key, testTD(t, ids[0], 1, "a"), now), pubsub.ValidationAccept},
		{sign(t, alice.key, testTD(t, ids[1], 1, "a"), now), pubsub.ValidationAccept},
		{sign(t, alice.key, testTD(t, ids[2], 1, "a"), now), pubsub.ValidationReject},
		{sign(t, alice.key, testTD(t, ids[0], 2, "a"), now), pubsub.ValidationAccept},
	} {
		got, err := self.checkAnnounce(message(alice.id, alice.id, step.rec.Raw))
		if got != step.want {
			t.Errorf("step %d: %s (%v), want %s", i, topicval.ResultName(got), err, topicval.ResultName(step.want))
		}
		if got == pubsub.ValidationReject && !errors.Is(err, directory.ErrQuota) {
			t.Errorf("step %d: %v does not wrap directory.ErrQuota", i, err)
		}
	}
	self.learn.flush() // what the learn queue's worker does next
	if n, _ := dir.Usage(alice.id); n != 2 {
		t.Errorf("held %d Things of alice, want 2", n)
	}
	if _, ok := dir.Get(alice.id, ids[2]); ok {
		t.Error("the Thing over quota is held")
	}
}
