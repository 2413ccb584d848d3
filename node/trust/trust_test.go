package trust_test

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ids returns n deterministic publishers.
func ids(t *testing.T, n int) []peer.ID {
	t.Helper()
	out := make([]peer.ID, n)
	for i := range out {
		seed := make([]byte, ed25519.SeedSize)
		seed[0] = byte(i + 1)
		id, err := lmosproto.PeerIDFromEd25519(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = id
	}
	return out
}

func TestList(t *testing.T) {
	p := ids(t, 5)
	self, allowed, preferred, denied, unknown := p[0], p[1], p[2], p[3], p[4]
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 3
	preferredDID := lmosproto.DIDKey(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	l, err := trust.New(self, trust.Config{Allow: []string{allowed.String()}, Prefer: []string{preferredDID}, Deny: []string{denied.String()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p      peer.ID
		mark   trust.Mark
		rank   int
		admits bool
	}{
		{self, trust.Own, trust.RankOwn, true},
		{allowed, trust.Trusted, trust.RankAllowed, true},
		{preferred, trust.Trusted, trust.RankPreferred, true},
		{denied, trust.Denied, trust.RankDenied, false},
		{unknown, trust.Unknown, trust.RankUnknown, true},
	} {
		if got := l.Mark(tc.p); got != tc.mark {
			t.Errorf("Mark(%s) = %s, want %s", tc.p, got, tc.mark)
		}
		if got := l.Rank(tc.p); got != tc.rank {
			t.Errorf("Rank(%s) = %d, want %d", tc.p, got, tc.rank)
		}
		if got := l.Admits(tc.p); got != tc.admits {
			t.Errorf("Admits(%s) = %v, want %v", tc.p, got, tc.admits)
		}
	}
	// Live changes: moving, removing; the node itself cannot be denied.
	if err := l.Set(denied, trust.Allow); err != nil || !l.Admits(denied) || l.Mark(denied) != trust.Trusted {
		t.Errorf("Set(denied, allow): %v, admits %v", err, l.Admits(denied))
	}
	if !l.Remove(denied) || l.Remove(denied) || l.Mark(denied) != trust.Unknown {
		t.Error("Remove")
	}
	if err := l.Set(self, trust.Deny); err == nil {
		t.Error("Set(self, deny): no error")
	}
	c := l.Config()
	if len(c.Allow) != 1 || len(c.Prefer) != 1 || c.Prefer[0] != preferred.String() || len(c.Deny) != 0 {
		t.Errorf("Config() = %+v", c)
	}

	// onlyTrusted: unknown publishers are not admitted.
	only, err := trust.New(self, trust.Config{Allow: []string{allowed.String()}, OnlyTrusted: true})
	if err != nil {
		t.Fatal(err)
	}
	if only.Admits(unknown) || !only.Admits(allowed) || !only.Admits(self) {
		t.Error("onlyTrusted admits the wrong publishers")
	}
	// A nil list admits everyone and ranks no one.
	var none *trust.List
	if !none.Admits(unknown) || none.Rank(unknown) != trust.RankUnknown || none.Mark(unknown) != trust.Unknown {
		t.Error("nil list")
	}
}

func TestConfigValidate(t *testing.T) {
	p := ids(t, 2)
	for _, tc := range []struct {
		name string
		cfg  trust.Config
		want string
	}{
		{"empty", trust.Config{}, ""},
		{"not a publisher", trust.Config{Deny: []string{"bob"}}, "deny[0]"},
		{"twice", trust.Config{Allow: []string{p[1].String()}, Deny: []string{p[1].String()}}, "listed in allow already"},
	} {
		err := tc.cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := trust.New(p[0], trust.Config{Deny: []string{p[0].String()}}); err == nil {
		t.Error("New with the node itself denied: no error")
	}
}

// TestOrganizations: an organisation entry (DID or domain) applies to the
// publishers that prove membership, a publisher's own entry wins, and the
// entries round-trip through Config.
func TestOrganizations(t *testing.T) {
	p := ids(t, 4)
	self, member, other, listed := p[0], p[1], p[2], p[3]
	l, err := trust.New(self, trust.Config{Allow: []string{"Org.Example."}, Deny: []string{"did:web:bad.example", listed.String()}, OnlyTrusted: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.Mark(member) != trust.Unknown || l.Admits(member) {
		t.Fatal("an organisation applies before membership is known")
	}
	orgOf := map[peer.ID][2]string{
		member: {"did:web:org.example", "org.example"},
		other:  {"did:web:bad.example", "bad.example"},
		listed: {"did:web:org.example", "org.example"},
	}
	l.SetMembership(func(q peer.ID) (string, string, bool) {
		o, ok := orgOf[q]
		return o[0], o[1], ok
	})
	if got := l.Mark(member); got != trust.Trusted || !l.Admits(member) || l.Rank(member) != trust.RankAllowed {
		t.Errorf("member of an allowed domain: %s", got)
	}
	if got := l.Mark(other); got != trust.Denied || l.Admits(other) {
		t.Errorf("member of a denied DID: %s", got)
	}
	if got := l.Mark(listed); got != trust.Denied {
		t.Errorf("a publisher's own entry loses to its organisation's: %s", got)
	}
	if err := l.SetOrganization("did:web:org.example", trust.Prefer); err != nil {
		t.Fatal(err)
	}
	if l.Rank(member) != trust.RankPreferred {
		t.Error("the DID entry does not win over the domain entry")
	}
	c := l.Config()
	if strings.Join(c.Allow, ",") != "org.example" || !strings.Contains(strings.Join(c.Deny, ","), "did:web:bad.example") {
		t.Errorf("config %+v", c)
	}
	if !l.RemoveOrganization("org.example") || l.RemoveOrganization("org.example") {
		t.Error("RemoveOrganization")
	}
	for _, bad := range []string{"did:web:", "no-dot", "did:web:a.example#x", "-bad.example"} {
		if _, err := trust.New(self, trust.Config{Allow: []string{bad}}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestMove: a rotated key's level goes to its successor; a successor
// listed already keeps its own; an unlisted key moves nothing.
func TestMove(t *testing.T) {
	p := ids(t, 6)
	self, preferred, successor, denied, listed, unknown := p[0], p[1], p[2], p[3], p[4], p[5]
	l, err := trust.New(self, trust.Config{Prefer: []string{preferred.String()}, Deny: []string{denied.String()}, Allow: []string{listed.String()}})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Move(preferred, successor) || l.Level(successor) != trust.Prefer || l.Level(preferred) != "" {
		t.Fatalf("move prefer: successor %q, old %q", l.Level(successor), l.Level(preferred))
	}
	if !l.Move(denied, listed) || l.Level(listed) != trust.Allow || l.Level(denied) != "" {
		t.Fatalf("move onto a listed successor: %q, old %q", l.Level(listed), l.Level(denied))
	}
	if l.Move(unknown, successor) {
		t.Fatal("an unlisted key moved")
	}
}
