package federation

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/p2p"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// errDiskGone is what failingStore's Sync answers while it fails.
var errDiskGone = errors.New("test: the disk stopped syncing")

// failingStore is a datastore that models a disk: a write is lost in a
// crash unless a Sync that succeeded after it made it durable, and one
// that a failed Sync should have made durable is lost whatever syncs
// follow (a failed fsync may drop the dirty pages), unless the key is
// written and synced again. While fail is set, Sync fails.
type failingStore struct {
	ds.Batching
	fail atomic.Bool

	mu sync.Mutex
	// unsynced holds, per key written since the last Sync, the value
	// before the first such write (nil: absent); lost, per key whose
	// write a failed Sync lost, the value before it.
	unsynced map[ds.Key][]byte
	lost     map[ds.Key][]byte
}

func newFailingStore() *failingStore {
	return &failingStore{Batching: dssync.MutexWrap(ds.NewMapDatastore()),
		unsynced: make(map[ds.Key][]byte), lost: make(map[ds.Key][]byte)}
}

// note records key's value before a write.
func (s *failingStore) note(ctx context.Context, k ds.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.unsynced[k]; ok {
		return
	}
	v, err := s.Get(ctx, k)
	if err != nil {
		v = nil
	}
	s.unsynced[k] = v
}

func (s *failingStore) Put(ctx context.Context, k ds.Key, v []byte) error {
	s.note(ctx, k)
	return s.Batching.Put(ctx, k, v)
}

func (s *failingStore) Delete(ctx context.Context, k ds.Key) error {
	s.note(ctx, k)
	return s.Batching.Delete(ctx, k)
}

func (s *failingStore) Sync(ctx context.Context, k ds.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail.Load() {
		for key, prev := range s.unsynced {
			if _, ok := s.lost[key]; !ok {
				s.lost[key] = prev
			}
		}
		clear(s.unsynced)
		return errDiskGone
	}
	for key := range s.unsynced {
		delete(s.lost, key)
	}
	clear(s.unsynced)
	return s.Batching.Sync(ctx, k)
}

func (s *failingStore) Batch(ctx context.Context) (ds.Batch, error) {
	return ds.NewBasicBatch(s), nil
}

// crash undoes every write that is not durable.
func (s *failingStore) crash(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := context.Background()
	for k, v := range s.unsynced {
		if prev, ok := s.lost[k]; ok {
			v = prev
		}
		s.lost[k] = v
	}
	for k, v := range s.lost {
		var err error
		if v == nil {
			err = s.Batching.Delete(ctx, k)
		} else {
			err = s.Batching.Put(ctx, k, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	clear(s.unsynced)
	clear(s.lost)
}

// gossipPeer is a host with gossipsub, for Federations that announce.
type gossipPeer struct {
	host host.Host
	ps   *pubsub.PubSub
	key  ed25519.PrivateKey
}

func newGossipPeer(t *testing.T) gossipPeer {
	t.Helper()
	h, key := newHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The node's message ids: the same bytes again are a duplicate.
	ps, err := pubsub.NewGossipSub(ctx, h, pubsub.WithFloodPublish(true), pubsub.WithMessageIdFn(p2p.MessageID),
		// 16 shards' subscriptions to a new peer at once.
		pubsub.WithPeerOutboundQueueSize(128))
	if err != nil {
		t.Fatal(err)
	}
	return gossipPeer{host: h, ps: ps, key: key}
}

// federate opens a directory on store and starts a Federation configured
// by cfg with gossip on p. The caller closes both (or, to crash, does not).
func (p gossipPeer) federate(t *testing.T, store ds.Batching, cfg Config) (*Federation, *directory.Directory) {
	t.Helper()
	dir, err := directory.Open(directory.Deps{Datastore: store, Self: p.host.ID()}, directory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Deps{Host: p.host, Key: p.key, Directory: dir, PubSub: p.ps}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f, dir
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPublishAheadCrash: a version is announced while its write's fsync
// runs. When the fsync fails after the announcement (and the write is
// lost), others hold a seq the publisher does not; neither the next
// version in the same run nor the first after the restart may sign that
// seq again, and the others take the new version.
func TestPublishAheadCrash(t *testing.T) {
	ctx := context.Background()
	a, b := newGossipPeer(t), newGossipPeer(t)
	store := newFailingStore()
	fa, dirA := a.federate(t, store, Config{})
	bStore := dssync.MutexWrap(ds.NewMapDatastore())
	fb, dirB := b.federate(t, bStore, Config{})
	t.Cleanup(func() { fb.Close(); dirB.Close() })
	if err := a.host.Connect(ctx, peer.AddrInfo{ID: b.host.ID(), Addrs: b.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "topic peers", func() bool {
		return len(a.ps.ListPeers(lmosproto.TopicAnnounce)) == 1 && len(b.ps.ListPeers(lmosproto.TopicAnnounce)) == 1
	})
	id := uniqueID()
	bHolds := func(seq uint64) func() bool {
		return func() bool { e, ok := dirB.Latest(a.host.ID(), id); return ok && e.Seq == seq }
	}
	publish := func(f *Federation) (directory.Entry, error) {
		e, _, err := f.Publish(ctx, testTD(t, id, 0, "a"), nil)
		return e, err
	}
	// failFsync publishes with the fsync failing: B gets seq anyway.
	failFsync := func(seq uint64) {
		t.Helper()
		store.fail.Store(true)
		if _, err := publish(fa); !errors.Is(err, errDiskGone) {
			t.Fatalf("publish on a failing disk: %v, want %v", err, errDiskGone)
		}
		waitFor(t, "the announced seq at B", bHolds(seq))
	}

	if e, err := publish(fa); err != nil || e.Seq != 1 {
		t.Fatalf("first version: seq %d, %v", e.Seq, err)
	}
	waitFor(t, "seq 1 at B", bHolds(1))

	// The fsync fails after the announcement: B holds 2; A holds it,
	// not durably.
	failFsync(2)
	// The same run: the next version goes above the announced seq.
	store.fail.Store(false)
	if e, err := publish(fa); err != nil || e.Seq != 3 {
		t.Fatalf("next version after the failed write: seq %d, %v; want 3", e.Seq, err)
	}
	waitFor(t, "seq 3 at B", bHolds(3))

	// Announced, not durable; the disk works again and the node closes,
	// but the write it could not sync is lost (a failed fsync may drop
	// it whatever follows). The run must not end clean.
	failFsync(4)
	store.fail.Store(false)
	if err := fa.Close(); err != nil {
		t.Fatal(err)
	}
	dirA.Close()
	store.crash(t)

	// The restart: the directory holds 3; the next version is 5, written
	// before it is announced, and B takes it.
	fa, dirA = a.federate(t, store, Config{})
	t.Cleanup(func() { fa.Close(); dirA.Close() })
	if e, _ := dirA.Latest(a.host.ID(), id); e.Seq != 3 {
		t.Fatalf("after the restart A holds seq %d, want 3", e.Seq)
	}
	if e, err := publish(fa); err != nil || e.Seq != 5 {
		t.Fatalf("first version after the crash: seq %d, %v; want 5", e.Seq, err)
	}
	waitFor(t, "seq 5 at B", bHolds(5))
	// Then versions follow one by one again.
	if e, err := publish(fa); err != nil || e.Seq != 6 {
		t.Fatalf("next version: seq %d, %v; want 6", e.Seq, err)
	}
	waitFor(t, "seq 6 at B", bHolds(6))
}
