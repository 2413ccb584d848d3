package groups

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestInvitationRoundTrip(t *testing.T) {
	alice, bob := newActor(t, "alice"), newActor(t, "bob")
	l := newGroup(t, alice, "diag")
	in := Invitation{
		Group: l.ID(), Name: "diag", Addrs: []string{"/ip4/127.0.0.1/tcp/4001"}, For: bob.id,
		Role: "reviewer", Things: []string{"urn:a", "urn:b"}, Uses: 3, Expires: t0.Add(24 * time.Hour),
	}
	tok, err := NewInvitation(alice.key, in, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, InvitePrefix) {
		t.Fatalf("token %q", tok)
	}
	inv, err := ParseInvitation(tok, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Issuer != alice.id || inv.Group != l.ID() || inv.Name != "diag" || inv.For != bob.id || inv.Role != "reviewer" ||
		!reflect.DeepEqual(inv.Things, scopeDigests(l.ID(), in.Things)) || inv.Uses != 3 || !inv.Issued.Equal(t0) || !inv.Expires.Equal(in.Expires) ||
		!reflect.DeepEqual(inv.Addrs, in.Addrs) || !isOpID(inv.ID) || inv.Token() != tok {
		t.Fatalf("round trip: %+v", inv)
	}
	// Two invitations with the same fields differ (nonce).
	tok2, err := NewInvitation(alice.key, in, t0)
	if err != nil {
		t.Fatal(err)
	}
	if tok2 == tok {
		t.Fatal("two invitations share a token")
	}
}

func TestInvitationRejects(t *testing.T) {
	alice := newActor(t, "alice")
	l := newGroup(t, alice, "diag")
	tok, err := NewInvitation(alice.key, Invitation{Group: l.ID(), Expires: t0.Add(time.Hour)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseInvitation(tok, t0.Add(time.Hour+time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("expired: %v, want ErrExpired", err)
	}
	if _, err := ParseInvitation(tok, t0.Add(time.Hour)); err != nil {
		t.Errorf("at the expiry second: %v", err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, InvitePrefix))
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(raw), `"expires":"2026-11-21T11:00:00Z"`, `"expires":"2027-11-21T11:00:00Z"`, 1)
	if tampered == string(raw) {
		t.Fatal("test did not tamper")
	}
	for name, bad := range map[string]string{
		"tampered":      InvitePrefix + base64.RawURLEncoding.EncodeToString([]byte(tampered)),
		"garbage":       InvitePrefix + "!!!not base64",
		"no prefix":     strings.TrimPrefix(tok, InvitePrefix),
		"not JSON":      InvitePrefix + base64.RawURLEncoding.EncodeToString([]byte("hello")),
		"empty":         "",
		"an op instead": InvitePrefix + base64.RawURLEncoding.EncodeToString(l.Ops()[0].Raw),
	} {
		if _, err := ParseInvitation(bad, t0); !errors.Is(err, ErrBadInvitation) {
			t.Errorf("%s: %v, want ErrBadInvitation", name, err)
		}
	}
	if _, err := ParseInvitation(InvitePrefix+strings.Repeat("A", 2*MaxTokenSize), t0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: %v, want ErrTooLarge", err)
	}
	if _, err := NewInvitation(alice.key, Invitation{Group: l.ID(), Expires: t0}, t0); err == nil {
		t.Error("an invitation that expires at once was made")
	}
	if _, err := NewInvitation(alice.key, Invitation{Group: "nope", Expires: t0.Add(time.Hour)}, t0); !errors.Is(err, ErrBadInvitation) {
		t.Errorf("bad group: %v", err)
	}
	// CheckJoin re-verifies: editing the parsed struct does not help.
	inv, err := ParseInvitation(tok, t0)
	if err != nil {
		t.Fatal(err)
	}
	inv.Raw = []byte(tampered)
	if err := l.CheckJoin(inv, alice.id, t0); !errors.Is(err, ErrBadInvitation) {
		t.Errorf("CheckJoin tampered: %v", err)
	}
}
