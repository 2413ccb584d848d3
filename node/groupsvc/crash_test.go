package groupsvc_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"

	"github.com/lmosnode/lmosnode/node/groupsvc"
)

// errDiskGone is what a failing diskStore answers.
var errDiskGone = errors.New("test: the disk stopped accepting writes")

// diskStore is a datastore whose writes fail while fail is set (a disk
// that stops accepting writes just before the process dies).
type diskStore struct {
	ds.Batching
	fail atomic.Bool
}

func (s *diskStore) Put(ctx context.Context, k ds.Key, v []byte) error {
	if s.fail.Load() {
		return errDiskGone
	}
	return s.Batching.Put(ctx, k, v)
}

// TestRemoveBeforePersist: an admin's operation leaves before its log is
// persisted. When the persist fails and the admin then dies, the members
// have the removal and the admin's log does not; after the restart the
// admin learns it back from them, and nothing it signed meanwhile
// collides with it.
func TestRemoveBeforePersist(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := &diskStore{Batching: dssync.MutexWrap(ds.NewMapDatastore())}
	_, aKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := startMember(t, aKey, store), newMember(t), newMember(t)
	a.connect(b)
	a.connect(c)
	b.connect(c)
	info, err := a.svc.Create(ctx, "crash", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := info.ID
	for _, m := range []*member{b, c} {
		token, _, err := a.svc.Invite(id, groupsvc.InviteOptions{For: m.id()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.svc.Join(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "c a member everywhere", memberOfAll(id, c.id(), a, b, c))

	store.fail.Store(true)
	if _, err := a.svc.Remove(ctx, id, c.id()); !errors.Is(err, errDiskGone) {
		t.Fatalf("Remove on a failing disk: %v, want %v", err, errDiskGone)
	}
	removed := func(m *member) func() bool {
		return func() bool { st, ok := m.svc.State(id); return ok && !st.IsMember(c.id()) }
	}
	waitFor(t, "the removal at b", removed(b))

	// The admin dies; its log on disk lacks the removal.
	a.stop()
	store.fail.Store(false)
	a2 := startMember(t, aKey, store)
	if st, ok := a2.svc.State(id); !ok || !st.IsMember(c.id()) {
		t.Fatalf("after the restart the admin's log has the removal (%v): the persist did not fail", ok)
	}
	// It acts before it has synced: a rename, concurrent with the lost
	// removal.
	if _, err := a2.svc.Rename(ctx, id, "crash-2"); err != nil {
		t.Fatal(err)
	}
	a2.connect(b)
	waitFor(t, "the admin learns the removal back", removed(a2))
	both := func(m *member) func() bool {
		return func() bool {
			st, ok := m.svc.State(id)
			return ok && !st.IsMember(c.id()) && st.Name == "crash-2"
		}
	}
	waitFor(t, "admin and b agree", func() bool { return both(a2)() && both(b)() })
	if st, _ := a2.svc.State(id); !st.IsMember(b.id()) || !st.IsAdmin(a2.id()) {
		t.Fatalf("state after the sync: %+v", st)
	}
}
