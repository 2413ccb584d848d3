package proto

import (
	"crypto/ed25519"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A round trip with a fixed Ed25519 seed. (This seed is not the key of the
// eddsa-jcs-2022 examples in vc-di-eddsa, which is did:key
// z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2; TestProofKeyPairVCDI
// checks that one against its published key pair.)
func TestDIDKeyRoundTrip(t *testing.T) {
	seed, _ := hex.DecodeString("9b937b81322d816cfab9d5a3baacc9b2a5febe4b149f126b3630f93a29527017")
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	did := DIDKey(pub)
	if !strings.HasPrefix(did, "did:key:z6Mk") {
		t.Fatalf("DIDKey = %q, want did:key:z6Mk…", did)
	}
	for _, s := range []string{did, DIDKeyVerificationMethod(pub)} {
		got, err := ParseDIDKey(s)
		if err != nil {
			t.Fatalf("ParseDIDKey(%q): %v", s, err)
		}
		if !got.Equal(pub) {
			t.Fatalf("ParseDIDKey(%q) = %x, want %x", s, got, pub)
		}
	}
	id, err := PeerIDFromEd25519(pub)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Ed25519FromPeerID(id)
	if err != nil || !back.Equal(pub) {
		t.Fatalf("Ed25519FromPeerID(%s) = %x, %v", id, back, err)
	}
}

func TestParseDIDKeyRejects(t *testing.T) {
	for _, s := range []string{
		"",
		"did:web:example.com",
		"did:key:",
		"did:key:abc", // not base58btc
		"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK#z6Mkother", // fragment mismatch
		"did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme",          // secp256k1, not Ed25519
	} {
		if _, err := ParseDIDKey(s); err == nil {
			t.Errorf("ParseDIDKey(%q) accepted", s)
		}
	}
}

// TestParsePublisher: a peer ID, its did:key and its verification method
// URL name the same publisher; anything else is refused.
func TestParsePublisher(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	id, err := PeerIDFromEd25519(pub)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{id.String(), DIDKey(pub), DIDKeyVerificationMethod(pub)} {
		if got, err := ParsePublisher(s); err != nil || got != id {
			t.Errorf("ParsePublisher(%q) = %s, %v; want %s", s, got, err, id)
		}
	}
	for _, s := range []string{"", "nobody", "12D3Koo", "did:key:zzz", "did:web:example.com"} {
		if got, err := ParsePublisher(s); err == nil {
			t.Errorf("ParsePublisher(%q) = %s, accepted", s, got)
		}
	}
}

func TestShortPublisher(t *testing.T) {
	const id = "12D3KooWJxLWSBaxuTCffiZvh7MV5Ht8m5rgEeq9vr6YMGoxzLF1"
	p, err := peer.Decode(id)
	if err != nil {
		t.Fatal(err)
	}
	if got := ShortPublisher(p); got != "…MGoxzLF1" {
		t.Errorf("ShortPublisher = %q", got)
	}
	for in, want := range map[string]string{
		"…MGoxzLF1": "MGoxzLF1", "...MGoxzLF1": "MGoxzLF1", "MGoxzLF1": "MGoxzLF1", "xzLF1x": "xzLF1x",
		"…zLF1": "", "…MGoxzL0": "", "…MGox-LF1": "", "": "",
	} {
		got, ok := PublisherSuffix(in)
		if got != want || ok != (want != "") {
			t.Errorf("PublisherSuffix(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
