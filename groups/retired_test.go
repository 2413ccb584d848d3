package groups

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestOpCacheRetired: an operation by a key retired at or before its
// creation is refused, by itself and inside a log record (the DHT
// validator), while the same key's earlier operations stay valid.
func TestOpCacheRetired(t *testing.T) {
	founder, member := newActor(t, "founder"), newActor(t, "member")
	l := newGroup(t, founder, "g")
	mustAdd(t, l, founder, Draft{Kind: KindAdd, Peer: member.id}, 1)
	before := mustAdd(t, l, member, Draft{Kind: KindLeave}, 2)
	after := sign(t, l, founder, Draft{Kind: KindRename, Name: "later"}, 10)

	cache := NewOpCache(0)
	retiredAt := t0.Add(5 * time.Second)
	cache.SetRetired(func(p peer.ID, created time.Time) error {
		if p == founder.id && !retiredAt.After(created) {
			return fmt.Errorf("revoked at %s", retiredAt)
		}
		return nil
	})
	if _, err := cache.ParseOp(before.Raw); err != nil {
		t.Fatalf("an operation of a key not retired: %v", err)
	}
	if _, err := cache.ParseOp(l.Ops()[0].Raw); err != nil {
		t.Fatalf("the genesis, before the founder's key was retired: %v", err)
	}
	for range 2 { // parsed, then from the cache
		if _, err := cache.ParseOp(after.Raw); !errors.Is(err, ErrRetiredKey) || !errors.Is(err, ErrNotAuthorized) {
			t.Fatalf("an operation made after its key was retired: %v", err)
		}
	}
	if _, err := l.Add(after); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.ParseLog(l.ID(), l.Marshal()); !errors.Is(err, ErrRetiredKey) {
		t.Fatalf("a log with it: %v", err)
	}
	v := Validator{Ops: cache}
	if err := v.Validate("/lmos-group/"+l.ID(), l.Marshal()); !errors.Is(err, ErrRetiredKey) {
		t.Fatalf("the DHT validator: %v", err)
	}
}
