package own_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/own"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// members allows the peers listed, for every group.
type members map[peer.ID]bool

func (m members) Allowed(_ []string, _ string, p peer.ID) bool { return m[p] }

type fixture struct {
	things *own.Things
	dir    *directory.Directory
	self   peer.ID
}

// newThings builds Things on a real federation (no peers) and directory.
func newThings(t *testing.T, access own.Access) fixture {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.NoListenAddrs, libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	raw, err := priv.Raw()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(ds.NewMapDatastore()), Self: h.ID()}, directory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	fed, err := federation.New(federation.Deps{Host: h, Key: ed25519.PrivateKey(raw), Directory: dir,
		MemberOf: func(string) bool { return true }}, federation.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fed.Close() })
	things, err := own.New(own.Deps{Directory: dir, Self: h.ID(), Publisher: fed, Access: access}, own.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { things.Close() })
	return fixture{things: things, dir: dir, self: h.ID()}
}

func td(t *testing.T, id string, groups ...string) *lmosproto.TD {
	t.Helper()
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  id,
		"title":               "Tool " + id,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"properties":          map[string]any{"model": map[string]any{"type": "string", "readOnly": true, "forms": []any{map[string]any{"href": "/model"}}}},
	}
	if len(groups) > 0 {
		doc["lmos:groups"] = groups
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// learn stores a Thing of another publisher, as the federation would.
func learn(t *testing.T, dir *directory.Directory, td *lmosproto.TD) peer.ID {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := lmosproto.SignThing(td, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dir.Put(rec, nil); err != nil {
		t.Fatal(err)
	}
	return rec.Publisher()
}

func status(err error) int {
	var p *lmosproto.Problem
	if errors.As(err, &p) {
		return p.Status
	}
	return 0
}

func TestResolve(t *testing.T) {
	f := newThings(t, members{})
	ctx := context.Background()

	// Another publisher's Thing alone: it.
	solo := learn(t, f.dir, td(t, "urn:solo"))
	if e, err := f.things.Resolve(ctx, "urn:solo", "", false); err != nil || e.Publisher != solo {
		t.Fatalf("solo: %v %v", e.Publisher, err)
	}
	// Two publishers: 300 with both as candidates; the own Thing wins.
	a := learn(t, f.dir, td(t, "urn:shared"))
	b := learn(t, f.dir, td(t, "urn:shared"))
	_, err := f.things.Resolve(ctx, "urn:shared", "", false)
	var p *lmosproto.Problem
	if !errors.As(err, &p) || p.Status != http.StatusMultipleChoices || len(p.Candidates) != 2 {
		t.Fatalf("ambiguous: %v", err)
	}
	if e, err := f.things.Resolve(ctx, "urn:shared", b, false); err != nil || e.Publisher != b {
		t.Fatalf("pinned: %v %v", e.Publisher, err)
	}
	if _, err := f.things.Owner(ctx, "urn:shared"); status(err) != http.StatusMultipleChoices {
		t.Fatalf("router's owner of an ambiguous id: %v", err)
	}
	if _, _, err := f.things.Publish(ctx, td(t, "urn:shared"), nil); err != nil {
		t.Fatal(err)
	}
	if e, err := f.things.Resolve(ctx, "urn:shared", "", false); err != nil || e.Publisher != f.self {
		t.Fatalf("own first: %v %v (others %s %s)", e.Publisher, err, a, b)
	}
	// Unknown: 404, and the router's ErrUnknownThing.
	if _, err := f.things.Resolve(ctx, "urn:none", "", true); status(err) != http.StatusNotFound {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := f.things.Owner(ctx, "urn:none"); !errors.Is(err, interact.ErrUnknownThing) {
		t.Fatalf("router's owner of an unknown id: %v", err)
	}
	// A group-scoped Thing this node may not see: unknown to a read,
	// forbidden to a call, pinned or not.
	hid := learn(t, f.dir, td(t, "urn:scoped", "g-alpha"))
	for _, pin := range []peer.ID{"", hid} {
		if _, err := f.things.Resolve(ctx, "urn:scoped", pin, false); status(err) != http.StatusNotFound {
			t.Fatalf("read of a hidden Thing (publisher %q): %v", pin, err)
		}
		if _, err := f.things.Resolve(ctx, "urn:scoped", pin, true); status(err) != http.StatusForbidden {
			t.Fatalf("call of a hidden Thing (publisher %q): %v", pin, err)
		}
	}
}

func TestResolveWithoutAccess(t *testing.T) {
	// Without Access only this node is allowed: it sees and calls a
	// scoped Thing, no other peer may.
	f := newThings(t, nil)
	other := learn(t, f.dir, td(t, "urn:scoped", "g-alpha"))
	if _, err := f.things.Resolve(context.Background(), "urn:scoped", "", true); err != nil {
		t.Fatalf("scoped Thing without Access: %v", err)
	}
	if f.things.Allowed([]string{"g-alpha"}, "urn:scoped", other) || !f.things.Allowed([]string{"g-alpha"}, "urn:scoped", f.self) {
		t.Fatal("without Access, Allowed must allow this node only")
	}
	f = newThings(t, allowAll{})
	learn(t, f.dir, td(t, "urn:scoped", "g-alpha"))
	if _, err := f.things.Resolve(context.Background(), "urn:scoped", "", true); err != nil {
		t.Fatalf("scoped Thing of a member: %v", err)
	}
}

type allowAll struct{}

func (allowAll) Allowed([]string, string, peer.ID) bool { return true }

// Registered handlers serve an own Thing through the engine; Remove
// detaches them and the Thing is gone; Exposed lists public own Things.
func TestRegisterRemove(t *testing.T) {
	f := newThings(t, nil)
	ctx := context.Background()
	thing := interact.NewThing()
	thing.OnProperty("model", func(context.Context) (lmosproto.Value, error) { return lmosproto.StringValue("T-1000"), nil }, nil)
	if err := f.things.Register(ctx, td(t, "urn:tool"), thing); err != nil {
		t.Fatal(err)
	}
	read := func() *lmosproto.Message {
		req := lmosproto.NewMessage("urn:tool", lmosproto.MsgReadProperty)
		req.Name = "model"
		s, err := f.things.Engine().Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return <-s.Replies()
	}
	if m := read(); m.Type != lmosproto.MsgPropertyReading || m.Value.String() != `"T-1000"` {
		t.Fatalf("read: %+v", m)
	}
	if got := f.things.Exposed(); len(got) != 1 || got[0].ID != "urn:tool" {
		t.Fatalf("exposed: %v", got)
	}
	// Exposes is Exposed's rule for one entry (the consumer view's MQTT
	// forms ask it): own, not scoped to groups.
	entry, _ := f.dir.Get(f.self, "urn:tool")
	scoped := entry
	scoped.Groups = []string{"g-ops"}
	learned := entry
	learned.Publisher = "12D3KooWKnDkQ5uVhnnXh3tWm6n3sA4t9sCj1DUQPrXRyqxYoXFT"
	for _, c := range []struct {
		what string
		e    directory.Entry
		want bool
	}{{"own public", entry, true}, {"own group-scoped", scoped, false}, {"another publisher's", learned, false}} {
		if got := f.things.Exposes(c.e); got != c.want {
			t.Errorf("Exposes(%s) = %v, want %v", c.what, got, c.want)
		}
	}
	if err := f.things.Remove(ctx, "urn:tool"); err != nil {
		t.Fatal(err)
	}
	if m := read(); m.Type != lmosproto.MsgError || m.Status != "404" {
		t.Fatalf("read after remove: %+v", m)
	}
	if got := f.things.Exposed(); len(got) != 0 {
		t.Fatalf("exposed after remove: %v", got)
	}
	// A Thing with no handlers and no backend URL: 503 naming the fix.
	if _, _, err := f.things.Publish(ctx, td(t, "urn:bare"), nil); err != nil {
		t.Fatal(err)
	}
	req := lmosproto.NewMessage("urn:bare", lmosproto.MsgReadProperty)
	req.Name = "model"
	s, err := f.things.Engine().Invoke(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m := <-s.Replies(); m.Type != lmosproto.MsgError || m.Status != "503" {
		t.Fatalf("read without a backend: %+v", m)
	}
}

// TestResolveDIDCaller: a caller the API authenticated by its DID sees
// public Things and the node's own Things of groups its key is a member
// of, never another publisher's group-scoped Thing (the call would go out
// as this node); a call of an own scoped Thing asks Access with the
// caller's key, not this node's.
func TestResolveDIDCaller(t *testing.T) {
	member, stranger := peer.ID("12D3KooWmember"), peer.ID("12D3KooWstranger")
	f := newThings(t, members{member: true})
	ctx := context.Background()
	if _, _, err := f.things.Publish(ctx, td(t, "urn:own-scoped", "g-alpha"), nil); err != nil {
		t.Fatal(err)
	}
	learn(t, f.dir, td(t, "urn:public"))
	learn(t, f.dir, td(t, "urn:their-scoped", "g-alpha"))
	for _, tc := range []struct {
		caller peer.ID
		id     string
		want   int
	}{
		{member, "urn:own-scoped", 0},
		{stranger, "urn:own-scoped", http.StatusForbidden},
		{member, "urn:public", 0},
		{stranger, "urn:public", 0},
		{member, "urn:their-scoped", http.StatusForbidden},
	} {
		dctx := interact.WithDIDCaller(ctx, interact.DIDCaller{DID: "did:wba:client.example:" + string(tc.caller), Peer: tc.caller})
		if _, err := f.things.Resolve(dctx, tc.id, "", true); status(err) != tc.want {
			t.Errorf("%s calls %s: %v, want status %d", tc.caller, tc.id, err, tc.want)
		}
	}
	// Without a DID caller, the owner calls the own scoped Thing.
	if _, err := f.things.Resolve(ctx, "urn:own-scoped", "", true); err != nil {
		t.Fatalf("owner: %v", err)
	}
}
