package federation

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// scopedLog records what a Federation hands to Deps.Scoped.
type scopedLog struct {
	mu   sync.Mutex
	sent []scopedSend
}

type scopedSend struct {
	groups []string
	record []byte
}

func (l *scopedLog) PublishThing(_ context.Context, groups []string, record []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = append(l.sent, scopedSend{groups: groups, record: record})
	return len(groups), nil
}

func (l *scopedLog) last(t *testing.T) scopedSend {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.sent) == 0 {
		t.Fatal("nothing was handed to Params.Scoped")
	}
	return l.sent[len(l.sent)-1]
}

func (l *scopedLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent)
}

func memberOf(groups ...string) func(string) bool {
	return func(g string) bool { return slices.Contains(groups, g) }
}

func scopedTD(t *testing.T, id string, groups ...string) *lmosproto.TD {
	td := testTD(t, id, 0, "secret-diagnostics")
	td.Groups = groups
	return td
}

func TestPublishScoped(t *testing.T) {
	ctx := context.Background()
	var log scopedLog
	alice := newMember(t, func(p *Deps, _ *Config) {
		p.MemberOf = memberOf("g-alpha")
		p.Scoped = &log
	})

	// A group this node is not a member of: refused, naming the field.
	id := uniqueID()
	_, _, err := alice.Publish(ctx, scopedTD(t, id, "g-alpha", "g-beta"), nil)
	var verrs lmosproto.ValidationErrors
	if !errors.Is(err, ErrNotMember) || !errors.As(err, &verrs) || len(verrs) != 1 || verrs[0].Pointer != "/lmos:groups/1" {
		t.Fatalf("publish naming a foreign group: %v; want ErrNotMember at /lmos:groups/1", err)
	}
	if _, ok := alice.dir.Latest(alice.id, id); ok {
		t.Fatal("a refused Thing was stored")
	}
	if log.len() != 0 {
		t.Fatal("a refused Thing was spread")
	}

	// A member's Thing goes to its groups, and only there.
	if _, _, err := alice.Publish(ctx, scopedTD(t, id, "g-alpha"), nil); err != nil {
		t.Fatal(err)
	}
	got := log.last(t)
	rec, err := alice.Intake().Check(alice.id, got.record)
	if err != nil || !slices.Equal(got.groups, []string{"g-alpha"}) || rec.TD == nil || rec.ThingID != id {
		t.Fatalf("Scoped got groups %v, record %v (%v)", got.groups, rec, err)
	}
	if err := alice.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	got = log.last(t)
	if rec, err := alice.Intake().Check(alice.id, got.record); err != nil || !rec.Tombstone() || !slices.Equal(got.groups, []string{"g-alpha"}) {
		t.Fatalf("the tombstone of a scoped Thing: groups %v, record %v (%v)", got.groups, rec, err)
	}

	// Without MemberOf every group is refused.
	bob := newMember(t, nil)
	if _, _, err := bob.Publish(ctx, scopedTD(t, uniqueID(), "g-alpha"), nil); !errors.Is(err, ErrNotMember) {
		t.Fatalf("publish without MemberOf: %v, want ErrNotMember", err)
	}
}

func TestAcceptScoped(t *testing.T) {
	ctx := context.Background()
	var log scopedLog
	alice := newMember(t, func(p *Deps, _ *Config) {
		p.MemberOf = memberOf("g-alpha")
		p.Scoped = &log
	})
	bob := newMember(t, nil)
	carol := newMember(t, nil)
	id := uniqueID()

	if _, _, err := alice.Publish(ctx, scopedTD(t, id, "g-alpha"), nil); err != nil {
		t.Fatal(err)
	}
	v1 := log.last(t).record
	v2td := scopedTD(t, id, "g-alpha")
	v2td.Title = "Test second version"
	if _, _, err := alice.Publish(ctx, v2td, nil); err != nil {
		t.Fatal(err)
	}
	v2 := log.last(t).record
	forged := bytes.Replace(v2, []byte(`"Test `), []byte(`"Evil `), 1)
	if bytes.Equal(forged, v2) {
		t.Fatal("the test could not forge the record")
	}
	public := sign(t, alice.key, testTD(t, id, 9, "x"), alice.clock.Now())

	for _, step := range []struct {
		name   string
		from   peer.ID
		group  string
		record []byte
		is     error // nil: accepted
		heldAt uint64
	}{
		{"sent by another peer", carol.id, "g-alpha", v1, ErrNotPublisher, 0},
		{"another group", alice.id, "g-beta", v1, ErrWrongGroup, 0},
		{"a public Thing on a group topic", alice.id, "g-alpha", public.Raw, ErrWrongGroup, 0},
		{"forged", alice.id, "g-alpha", forged, errAny, 0},
		{"the member's record", alice.id, "g-alpha", v1, nil, 1},
		{"again", alice.id, "g-alpha", v1, ErrNotNewer, 1},
		{"next version", alice.id, "g-alpha", v2, nil, 2},
		{"replay of the first", alice.id, "g-alpha", v1, errReplay, 2},
	} {
		err := bob.Intake().AcceptScoped(ctx, step.from, step.group, step.record)
		switch {
		case step.is == nil && err != nil:
			t.Errorf("%s: %v, want accepted", step.name, err)
		case step.is != nil && err == nil:
			t.Errorf("%s: accepted, want %v", step.name, step.is)
		case step.is != nil && step.is != errAny && !errors.Is(err, step.is):
			t.Errorf("%s: %v, want %v", step.name, err, step.is)
		}
		held, ok := bob.dir.Latest(alice.id, id)
		if ok != (step.heldAt > 0) || held.Seq != step.heldAt {
			t.Errorf("%s: bob holds seq %d (%v), want %d", step.name, held.Seq, ok, step.heldAt)
		}
	}
	if e, ok := bob.dir.Get(alice.id, id); !ok || !slices.Equal(e.Groups, []string{"g-alpha"}) || e.Title != "Test second version" {
		t.Fatalf("bob's entry: %+v (%v)", e, ok)
	}

	// The tombstone: checked against the groups of the Thing it removes.
	if err := alice.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	tomb := log.last(t).record
	if err := carol.Intake().AcceptScoped(ctx, alice.id, "g-alpha", tomb); !errors.Is(err, ErrNotNewer) {
		t.Errorf("tombstone of a Thing not held: %v, want ErrNotNewer", err)
	}
	if err := bob.Intake().AcceptScoped(ctx, alice.id, "g-beta", tomb); !errors.Is(err, ErrWrongGroup) {
		t.Errorf("tombstone on another group: %v, want ErrWrongGroup", err)
	}
	if err := bob.Intake().AcceptScoped(ctx, alice.id, "g-alpha", tomb); err != nil {
		t.Errorf("tombstone: %v", err)
	}
	if e, ok := bob.dir.Latest(alice.id, id); !ok || !e.Tombstone {
		t.Error("the tombstone did not remove bob's copy")
	}
	// The publisher's own message comes back through its validator.
	if err := alice.Intake().AcceptScoped(ctx, alice.id, "g-alpha", v2); err != nil {
		t.Errorf("own record: %v", err)
	}
}

// errAny marks a step that must fail, whatever the reason.
var errAny = errors.New("any error")

func TestSyncServesScopedToAllowedPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		mu      sync.Mutex
		members = map[peer.ID]bool{}
	)
	alice := newMember(t, func(p *Deps, _ *Config) {
		p.MemberOf = memberOf("g-alpha")
		p.Allowed = func(groups []string, _ string, p peer.ID) bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(groups, "g-alpha") && members[p]
		}
	})
	bob := newMember(t, nil)
	carol := newMember(t, nil)
	mu.Lock()
	members[bob.id] = true
	mu.Unlock()
	open, secret := uniqueID(), uniqueID()
	if _, _, err := alice.Publish(ctx, testTD(t, open, 0, "x"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := alice.Publish(ctx, scopedTD(t, secret, "g-alpha"), nil); err != nil {
		t.Fatal(err)
	}
	connect(t, bob, alice)
	connect(t, carol, alice)

	if n, err := bob.Sync(ctx, alice.id, Filter{}); err != nil || n != 2 {
		t.Fatalf("member's sync: %d changes, %v; want 2", n, err)
	}
	if e, ok := bob.dir.Get(alice.id, secret); !ok || !slices.Equal(e.Groups, []string{"g-alpha"}) {
		t.Fatal("the member did not get the group-scoped Thing")
	}
	if n, err := carol.Sync(ctx, alice.id, Filter{}); err != nil || n != 1 {
		t.Fatalf("outsider's sync: %d changes, %v; want 1", n, err)
	}
	if _, ok := carol.dir.Latest(alice.id, secret); ok {
		t.Fatal("the outsider got the group-scoped Thing")
	}
	if _, ok := carol.dir.Get(alice.id, open); !ok {
		t.Fatal("the outsider did not get the public Thing")
	}
}

// The lookups answer with learned group-scoped Things only if this node
// may see them.
func TestFindHidesScoped(t *testing.T) {
	ctx := context.Background()
	var (
		mu    sync.Mutex
		allow bool
	)
	bob := newMember(t, func(p *Deps, _ *Config) {
		p.Allowed = func([]string, string, peer.ID) bool {
			mu.Lock()
			defer mu.Unlock()
			return allow
		}
	})
	alice := newMember(t, nil)
	rec := sign(t, alice.key, scopedTD(t, uniqueID(), "g-alpha"), bob.clock.Now())
	if _, err := bob.dir.Put(rec, nil); err != nil {
		t.Fatal(err)
	}
	got, err := bob.FindCapability(ctx, "secret-diagnostics")
	if err != nil || len(got) != 0 {
		t.Fatalf("non-member's lookup: %v, %v; want nothing", got, err)
	}
	mu.Lock()
	allow = true
	mu.Unlock()
	if got, err = bob.FindCapability(ctx, "secret-diagnostics"); err != nil || len(got) != 1 {
		t.Fatalf("member's lookup: %v, %v; want the Thing", got, err)
	}
}

// A group-scoped record on the public announce topic is rejected.
func TestAnnounceRejectsScoped(t *testing.T) {
	self := newMember(t, nil)
	alice := newMember(t, nil)
	rec := sign(t, alice.key, scopedTD(t, uniqueID(), "g-alpha"), self.clock.Now())
	if got, err := self.checkAnnounce(message(alice.id, alice.id, rec.Raw)); got != pubsub.ValidationReject || !errors.Is(err, errScopedAnnounced) {
		t.Fatalf("scoped announcement: %s (%v), want reject", topicval.ResultName(got), err)
	}
	if _, ok := self.dir.Latest(alice.id, rec.ThingID); ok {
		t.Fatal("a scoped announcement was stored")
	}
}
