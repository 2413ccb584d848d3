package groupsvc_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
)

// TestRekey: member B's node restarts under a new key B2 (its datastore
// kept, as after `lmosnode key rotate`); admin A moves B's membership to
// B2 (an add and a remove, ordinary operations), B2 learns that it is a
// member and posts. A's cache refuses operations B's old key made after
// it was retired: a leave that B's old node publishes on the topic does
// not enter A's log.
func TestRekey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var retiredKey atomicPeer
	ops := groups.NewOpCache(0)
	ops.SetRetired(func(p peer.ID, created time.Time) error {
		if at, ok := retiredKey.get(p); ok && !at.After(created) {
			return errors.New("retired")
		}
		return nil
	})
	_, aKey, _ := ed25519.GenerateKey(nil)
	a := startMemberOps(t, aKey, dssync.MutexWrap(ds.NewMapDatastore()), ops)
	bStore := dssync.MutexWrap(ds.NewMapDatastore())
	_, bKey, _ := ed25519.GenerateKey(nil)
	b := startMember(t, bKey, bStore)
	a.connect(b)
	info, err := a.svc.Create(ctx, "g", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := info.ID
	token, _, err := a.svc.Invite(id, groupsvc.InviteOptions{For: b.id()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Join(ctx, token); err != nil {
		t.Fatal(err)
	}
	old := b.id()

	// The old key is retired now; a leave it signs afterwards is refused.
	time.Sleep(1100 * time.Millisecond) // proof times have second precision
	retiredKey.set(old, time.Now().Truncate(time.Second))
	time.Sleep(1100 * time.Millisecond)
	if _, err := b.svc.Leave(ctx, id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if st, _ := a.svc.State(id); !st.IsMember(old) {
		t.Fatal("A took in a leave signed by a retired key")
	}
	b.stop()

	_, b2Key, _ := ed25519.GenerateKey(nil)
	b2 := startMember(t, b2Key, bStore)
	a.connect(b2)
	if n := a.svc.Rekey(ctx, old, b2.id()); n != 1 {
		t.Fatalf("Rekey changed %d groups, want 1", n)
	}
	st, _ := a.svc.State(id)
	if !st.IsMember(b2.id()) || st.IsMember(old) {
		t.Fatalf("A's members after Rekey: %v", st.Members)
	}
	waitFor(t, "B2 learns that it is a member", func() bool { return b2.svc.MemberOf(id) })
	waitFor(t, "B2 posts", func() bool { return b2.svc.Publish(ctx, id, []byte(`"hi"`)) == nil })
	if n := a.svc.Rekey(ctx, old, b2.id()); n != 0 {
		t.Fatalf("a second Rekey changed %d groups", n)
	}
}

// atomicPeer holds the time one peer's key was retired.
type atomicPeer struct {
	mu sync.Mutex
	p  peer.ID
	at time.Time
}

func (a *atomicPeer) set(p peer.ID, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.p, a.at = p, at
}

func (a *atomicPeer) get(p peer.ID) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at, a.p == p && p != ""
}
