package federation

import (
	"context"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

// TestRepairFromBeats: a directory node that missed a publisher's
// announcements (it connected after them, once the publisher had
// republished them to its first peer, and does not sync on connect)
// learns the Things from the digest in the publisher's presence beats: two
// beats that differ from what it holds make it sync with the publisher.
func TestRepairFromBeats(t *testing.T) {
	const interval = 150 * time.Millisecond
	newRole := func(role Role) *member {
		return newMember(t, func(d *Deps, c *Config) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			ps, err := pubsub.NewGossipSub(ctx, d.Host, pubsub.WithFloodPublish(true), pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
				// 16 shards' subscriptions to a new peer at once.
				pubsub.WithPeerOutboundQueueSize(128))
			if err != nil {
				t.Fatal(err)
			}
			d.PubSub = ps
			c.Role = role
			c.PresenceInterval = interval
		})
	}
	pub, dir, first := newRole(RoleDirectory), newRole(RoleDirectory), newRole(RoleV1)
	ids := []string{uniqueID(), uniqueID(), uniqueID()}
	for _, id := range ids {
		if _, _, err := pub.Publish(context.Background(), testTD(t, id, 1, capA), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Gone: a Thing removed before anyone heard of it is not counted.
	if err := pub.Remove(context.Background(), ids[2]); err != nil {
		t.Fatal(err)
	}
	connect(t, first, pub)
	waitFor(t, "the first peer to hear the republication", func() bool { return holds(first, pub.id, ids[0]) && holds(first, pub.id, ids[1]) })
	connect(t, dir, pub)
	// The members' clocks stand still; beats are told apart by their time.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(interval):
				for _, m := range []*member{pub, dir, first} {
					m.clock.Add(interval)
				}
			}
		}
	}()
	waitFor(t, "the directory node to repair what it missed", func() bool {
		return holds(dir, pub.id, ids[0]) && holds(dir, pub.id, ids[1])
	})
	if live, sum := dir.dir.Holding(pub.id); live != 2 || digest(sum) != digest(ownSum(pub)) {
		t.Errorf("the directory node holds %d Things, digest %s; the publisher beats %s", live, digest(sum), digest(ownSum(pub)))
	}
}

func ownSum(m *member) uint64 {
	_, sum := m.dir.OwnDigest()
	return sum
}

// TestRepairBackoff: a mismatch is repaired after two beats in a row, a
// beat seen again on another topic does not count twice, a mismatch that
// persists after a repair waits twice as long each time, and a beat that
// matches resets the wait.
func TestRepairBackoff(t *testing.T) {
	const interval = time.Minute
	m := newMember(t, func(_ *Deps, c *Config) { c.Role, c.PresenceInterval = RoleDirectory, interval })
	pub := newMember(t, nil)
	queued := func() int {
		n := 0
		for {
			select {
			case <-m.repairs.queue:
				n++
			default:
				return n
			}
		}
	}
	at := m.clock.Now()
	beat := func(b presence) int {
		m.compareBeat(pub.id, b)
		return queued()
	}
	odd := func() presence { return presence{Peer: pub.id.String(), At: at, Things: 1, Digest: digest(42)} }
	next := func() { at = at.Add(interval); m.clock.Add(interval) }
	for i, want := range []int{
		0, 1, // two beats in a row: repaired
		0, 1, // lost again, two beats after the repair: repaired (wait 2)
		0, 0, 0, 1, // still different: the wait doubles (4)
		0, 0, 0, 0, 0, 0, 0, 1, // (8)
	} {
		if got := beat(odd()); got != want {
			t.Fatalf("beat %d: %d repairs queued, want %d", i, got, want)
		}
		if got := beat(odd()); got != 0 {
			t.Fatalf("beat %d, seen again: %d repairs queued", i, got)
		}
		next()
	}
	// A beat that matches resets the wait: the next loss is repaired after
	// two beats again.
	if got := beat(presence{Peer: pub.id.String(), At: at, Digest: digest(0)}); got != 0 {
		t.Fatalf("matching beat: %d repairs queued", got)
	}
	next()
	for i, want := range []int{0, 1} {
		if got := beat(odd()); got != want {
			t.Fatalf("after the reset, beat %d: %d repairs queued, want %d", i, got, want)
		}
		next()
	}
	// A beat without a digest (an older node's) is not compared.
	if got := beat(presence{Peer: pub.id.String(), At: at}); got != 0 {
		t.Fatalf("beat without a digest: %d repairs queued", got)
	}
}
