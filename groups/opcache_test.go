package groups

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// TestOpCache: logs parsed through an OpCache answer as without one, a
// cache hit still goes through every rule of the log (group, order), a
// forged operation is refused every time and never cached, a caller's
// change to an Op does not reach another caller, and the cache holds no
// more bytes than its limit.
func TestOpCache(t *testing.T) {
	alice, bob, carol := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol")
	l := newGroup(t, alice, "cached")
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id, Role: RoleAdmin}, 2)
	mustAdd(t, l, carol, Draft{Kind: KindRemove, Peer: bob.id}, 3)
	rec := l.Marshal()

	cache := NewOpCache(0)
	v := Validator{Ops: cache}
	for range 2 { // a miss, then every operation a hit
		got, err := v.check(Key(l.ID()), rec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Marshal(), rec) || got.State().IsMember(bob.id) || !got.State().IsMember(carol.id) {
			t.Fatalf("log through the cache: %s, bob a member %v", got.Marshal(), got.State().IsMember(bob.id))
		}
	}
	if cache.Len() != 4 {
		t.Errorf("cache holds %d operations after two parses of a 4-operation log, want 4", cache.Len())
	}

	// Every operation cached, the log's own rules still apply.
	other := newGroup(t, bob, "other")
	if _, err := cache.ParseLog(other.ID(), rec); !errors.Is(err, ErrWrongGroup) {
		t.Errorf("cached log under another group: %v, want ErrWrongGroup", err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(rec, &raws); err != nil {
		t.Fatal(err)
	}
	swapped := slices.Clone(raws)
	swapped[1], swapped[3] = swapped[3], swapped[1]
	bad, err := json.Marshal(swapped)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.ParseLog(l.ID(), bad); err == nil {
		t.Error("cached operations out of order: accepted")
	}

	// A forged operation is refused every time and never cached.
	forged := bytes.Replace(raws[1], []byte(`"kind":"add"`), []byte(`"kind":"grant"`), 1)
	if bytes.Equal(forged, raws[1]) {
		t.Fatal("forgery changed nothing")
	}
	for range 2 {
		if _, err := cache.ParseOp(forged); !errors.Is(err, ErrBadOp) {
			t.Errorf("forged operation: %v, want ErrBadOp", err)
		}
	}
	if cache.Len() != 4 {
		t.Errorf("cache holds %d operations after a forged one, want 4", cache.Len())
	}

	// Each caller gets its own Op.
	first, err := cache.ParseOp(raws[1])
	if err != nil {
		t.Fatal(err)
	}
	first.Kind, first.Author = KindDissolve, carol.id
	second, err := cache.ParseOp(raws[1])
	if err != nil {
		t.Fatal(err)
	}
	if second.Kind != KindAdd || second.Author != alice.id {
		t.Errorf("second parse: %s by %s; a caller's change leaked", second.Kind, second.Author)
	}

	// The byte limit holds: room for about two operations.
	small := NewOpCache(2*len(raws[1]) + 1)
	for _, raw := range raws {
		if _, err := small.ParseOp(raw); err != nil {
			t.Fatal(err)
		}
	}
	if small.Len() == 0 || small.bytes > small.limit || small.Len() == len(raws) {
		t.Errorf("cache of %d bytes holds %d operations, %d bytes", small.limit, small.Len(), small.bytes)
	}

	// A nil cache parses as ParseLog does.
	var none *OpCache
	if got, err := none.ParseLog(l.ID(), rec); err != nil || !bytes.Equal(got.Marshal(), rec) {
		t.Errorf("nil cache: %v", err)
	}
}
