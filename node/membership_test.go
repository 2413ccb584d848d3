package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// scopedTD is a Thing restricted to the group g-alpha: a property and an
// event.
func scopedTD(t *testing.T, id string) *lmosproto.TD {
	t.Helper()
	raw, err := json.Marshal(map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  id,
		"title":               "Diagnostics",
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"lmos:groups":         []string{"g-alpha"},
		"properties": map[string]any{"model": map[string]any{"type": "string", "readOnly": true,
			"forms": []any{map[string]any{"href": "https://backend.example/model"}}}},
		"events": map[string]any{"alarm": map[string]any{"data": map[string]any{"type": "string"},
			"forms": []any{map[string]any{"href": "https://backend.example/alarm"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// Membership says whether peer p may see and call the Thing thingID
// restricted to groups (groupAccess.Allowed).
type Membership func(groups []string, thingID string, p peer.ID) bool

// testAccess stands in for the group service as the node's groupAccess:
// the test sets who is a member, and where scoped records go.
type testAccess struct {
	self   peer.ID
	mu     sync.Mutex
	allow  Membership
	scoped func(ctx context.Context, groups []string, record []byte) error
}

// setMembership makes m the predicate (nil allows no one).
func (a *testAccess) setMembership(m Membership) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allow = m
}

// setScopedPublisher makes pub receive the node's scoped records.
func (a *testAccess) setScopedPublisher(pub func(ctx context.Context, groups []string, record []byte) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scoped = pub
}

func (a *testAccess) Allowed(groups []string, thingID string, p peer.ID) bool {
	a.mu.Lock()
	m := a.allow
	a.mu.Unlock()
	return m != nil && m(groups, thingID, p)
}

func (a *testAccess) MemberOf(group string) bool { return a.Allowed([]string{group}, "", a.self) }

func (a *testAccess) PublishThing(ctx context.Context, groups []string, record []byte) (int, error) {
	a.mu.Lock()
	pub := a.scoped
	a.mu.Unlock()
	if pub == nil {
		return 0, nil
	}
	return len(groups), pub(ctx, groups, record)
}

// startNodeWithAccess starts a node whose group decisions a returns.
func startNodeWithAccess(t *testing.T, cfg config.Config) (*Node, *testAccess) {
	t.Helper()
	a := &testAccess{}
	n, err := New(cfg, WithLogger(testLogger(t)), func(o *options) error { o.access = a; return nil })
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a.self = n.PeerID()
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return n, a
}

// only is a membership predicate that allows the peers given.
func only(peers ...peer.ID) Membership {
	return func(_ []string, _ string, p peer.ID) bool {
		for _, q := range peers {
			if p == q {
				return true
			}
		}
		return false
	}
}

// httpGet answers status and body of GET base+path.
func httpGet(t *testing.T, n *Node, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + n.APIAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// A Thing restricted to a group: the owner answers other peers' calls
// only while the membership predicate allows them, on libp2p and through
// the caller's HTTP binding; a membership change ends running
// subscriptions; the consumer's API shows the Thing only while it may see
// it.
func TestGroupEnforcement(t *testing.T) {
	owner, ownerGroups := startNodeWithAccess(t, testConfig(t))
	consumer, consumerGroups := startNodeWithAccess(t, testConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := consumer.Host().Connect(ctx, peer.AddrInfo{ID: owner.PeerID(), Addrs: owner.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	id := "urn:lmos:test:diagnostics"
	th := interact.NewThing()
	th.OnProperty("model", func(context.Context) (lmosproto.Value, error) { return lmosproto.StringValue("T-1000"), nil }, nil)
	// The group service's state is replaced by a predicate that says who
	// is a member of g-alpha: first the owner alone.
	ownerGroups.setMembership(only(owner.PeerID()))
	consumerGroups.setMembership(only(consumer.PeerID()))
	if _, err := owner.Register(scopedTD(t, id), th); err != nil {
		t.Fatal(err)
	}
	// The consumer learns the Thing as a member would, from the group
	// topic; here it is handed over.
	e, ok := owner.Directory().Get(owner.PeerID(), id)
	if !ok {
		t.Fatal("owner lost its Thing")
	}
	rec, err := e.Record()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.Directory().Put(rec, nil); err != nil {
		t.Fatal(err)
	}
	read := func() *lmosproto.Message {
		req := lmosproto.NewMessage(id, lmosproto.MsgReadProperty)
		req.Name = "model"
		s, err := consumer.Invoker().Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		m, ok := <-s.Replies()
		if !ok {
			t.Fatal("no reply")
		}
		return m
	}
	property := "/things/" + url.PathEscape(id) + "/properties/model"

	// The consumer is not a member: refused.
	if m := read(); m.Type != lmosproto.MsgError || m.Status != "403" || m.Title != interact.TitleForbidden || !strings.Contains(m.Detail, "g-alpha") {
		t.Fatalf("outsider over libp2p: %+v", m)
	}
	if status, body := httpGet(t, consumer, property); status != http.StatusForbidden || !strings.Contains(body, "g-alpha") {
		t.Fatalf("outsider through its HTTP binding: %d %s", status, body)
	}
	// The owner's own API is the owner's.
	if status, body := httpGet(t, owner, property); status != http.StatusOK || body != `"T-1000"` {
		t.Fatalf("owner through its own API: %d %s", status, body)
	}

	// The consumer becomes a member.
	ownerGroups.setMembership(only(owner.PeerID(), consumer.PeerID()))
	owner.own.Reauthorize()
	if m := read(); m.Type != lmosproto.MsgPropertyReading || m.Value.String() != `"T-1000"` {
		t.Fatalf("member over libp2p: %+v", m)
	}
	if status, body := httpGet(t, consumer, property); status != http.StatusOK || body != `"T-1000"` {
		t.Fatalf("member through its HTTP binding: %d %s", status, body)
	}

	// A member's subscription ends with 403 when it is removed.
	sub := lmosproto.NewMessage(id, lmosproto.MsgSubscribeEvent)
	sub.Name = "alarm"
	s, err := consumer.Invoker().Invoke(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for th.Emit("alarm", lmosproto.StringValue("probe")) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the subscription never reached the owner")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if m := <-s.Replies(); m == nil || m.Type != lmosproto.MsgEvent {
		t.Fatalf("member's event: %+v", m)
	}
	ownerGroups.setMembership(only(owner.PeerID()))
	owner.own.Reauthorize()
	var last *lmosproto.Message
	for m := range s.Replies() {
		last = m
	}
	if last == nil || last.Type != lmosproto.MsgError || last.Status != "403" {
		t.Fatalf("removed member's subscription ended with %+v, want a 403 error", last)
	}

	// Visibility on the consumer: while it may see the Thing its API
	// lists and serves it; once not, it is unknown there, and a call is
	// refused before it leaves.
	ownerGroups.setMembership(only(owner.PeerID(), consumer.PeerID()))
	for _, path := range []string{"/things/" + url.PathEscape(id), "/things/" + url.PathEscape(id) + "/td"} {
		if status, body := httpGet(t, consumer, path); status != http.StatusOK {
			t.Fatalf("member's GET %s: %d %s", path, status, body)
		}
	}
	for _, path := range []string{"/things", "/things?view=consumer"} {
		if _, body := httpGet(t, consumer, path); !strings.Contains(body, id) {
			t.Fatalf("member's listing %s lacks the Thing: %s", path, body)
		}
	}
	consumerGroups.setMembership(only())
	for _, path := range []string{"/things/" + url.PathEscape(id), "/things/" + url.PathEscape(id) + "/td"} {
		if status, body := httpGet(t, consumer, path); status != http.StatusNotFound {
			t.Fatalf("non-member's GET %s: %d %s, want 404", path, status, body)
		}
	}
	for _, path := range []string{"/things", "/things?view=consumer"} {
		if status, body := httpGet(t, consumer, path); status != http.StatusOK || strings.Contains(body, id) {
			t.Fatalf("non-member's listing %s: %d, shows the Thing: %s", path, status, body)
		}
	}
	if status, body := httpGet(t, consumer, property); status != http.StatusForbidden || !strings.Contains(body, "may not call") {
		t.Fatalf("non-member's call through its HTTP binding: %d %s, want the local 403", status, body)
	}
	if m := read(); m.Type != lmosproto.MsgError || m.Status != "403" || !strings.Contains(m.Detail, "may not call") {
		t.Fatalf("non-member's call through its router (WebSocket, MQTT, SDK): %+v, want the local 403", m)
	}
	// The owner sees its own Thing whatever the predicate says.
	ownerGroups.setMembership(only())
	if status, _ := httpGet(t, owner, "/things/"+url.PathEscape(id)); status != http.StatusOK {
		t.Fatalf("owner's own Thing hidden: %d", status)
	}
	// …but publishing into a group it is not a member of fails, naming the field.
	td := scopedTD(t, "urn:lmos:test:other")
	if _, err := owner.Register(td, interact.NewThing()); err == nil || !strings.Contains(err.Error(), "/lmos:groups/0") {
		t.Fatalf("publish into a foreign group: %v", err)
	}
}

// The node hands its group-scoped records to the scoped publisher hook.
func TestScopedPublisherHook(t *testing.T) {
	n, groups := startNodeWithAccess(t, testConfig(t))
	groups.setMembership(only(n.PeerID()))
	type sent struct {
		groups []string
		record []byte
	}
	got := make(chan sent, 16)
	groups.setScopedPublisher(func(_ context.Context, groups []string, record []byte) error {
		got <- sent{groups, record}
		return nil
	})
	id := "urn:lmos:test:second"
	if _, err := n.Register(scopedTD(t, id), interact.NewThing()); err != nil {
		t.Fatal(err)
	}
	s := <-got
	var doc struct {
		ID     string   `json:"id"`
		Groups []string `json:"lmos:groups"`
	}
	if err := json.Unmarshal(s.record, &doc); err != nil || doc.ID != id || len(s.groups) != 1 || s.groups[0] != "g-alpha" || len(doc.Groups) != 1 {
		t.Fatalf("hook got groups %v, record %s (%v)", s.groups, s.record, err)
	}
}
