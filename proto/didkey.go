package proto

import (
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multibase"
)

// ed25519PubMulticodec is the unsigned-varint multicodec prefix of an
// Ed25519 public key (0xed), as used by did:key.
var ed25519PubMulticodec = []byte{0xed, 0x01}

const didKeyPrefix = "did:key:"

// DIDKey returns the did:key identifier of an Ed25519 public key:
// "did:key:z6Mk…" (multicodec ed25519-pub, multibase base58btc).
func DIDKey(pub ed25519.PublicKey) string {
	buf := make([]byte, 0, len(ed25519PubMulticodec)+len(pub))
	buf = append(append(buf, ed25519PubMulticodec...), pub...)
	s, err := multibase.Encode(multibase.Base58BTC, buf)
	if err != nil { // impossible: Base58BTC is a known encoding
		panic(err)
	}
	return didKeyPrefix + s
}

// DIDKeyVerificationMethod returns the verification method URL of a did:key,
// "did:key:z6Mk…#z6Mk…", the form a Data Integrity proof names its key by.
func DIDKeyVerificationMethod(pub ed25519.PublicKey) string {
	did := DIDKey(pub)
	return did + "#" + strings.TrimPrefix(did, didKeyPrefix)
}

// ParseDIDKey returns the Ed25519 public key named by a did:key identifier
// or verification method URL (a "#fragment", if present, must repeat the
// method-specific identifier).
func ParseDIDKey(s string) (ed25519.PublicKey, error) {
	did, frag, hasFrag := strings.Cut(s, "#")
	id, ok := strings.CutPrefix(did, didKeyPrefix)
	if !ok {
		return nil, fmt.Errorf("did:key: %q does not start with %q", s, didKeyPrefix)
	}
	if hasFrag && frag != id {
		return nil, fmt.Errorf("did:key: fragment %q does not match the key %q", frag, id)
	}
	if !strings.HasPrefix(id, "z") {
		return nil, fmt.Errorf("did:key: %q is not multibase base58btc (want prefix 'z')", id)
	}
	_, raw, err := multibase.Decode(id)
	if err != nil {
		return nil, fmt.Errorf("did:key: %q: %w", id, err)
	}
	key, ok := strings.CutPrefix(string(raw), string(ed25519PubMulticodec))
	if !ok {
		return nil, fmt.Errorf("did:key: %q is not an Ed25519 public key (multicodec 0xed)", id)
	}
	if len(key) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("did:key: %q holds %d key bytes, want %d", id, len(key), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(key), nil
}

// ParsePublisher returns the peer ID of a publisher named by its peer ID or
// by its did:key (a verification method URL too): the two name the same
// publisher.
func ParsePublisher(s string) (peer.ID, error) {
	if strings.HasPrefix(s, didKeyPrefix) {
		pub, err := ParseDIDKey(s)
		if err != nil {
			return "", err
		}
		return PeerIDFromEd25519(pub)
	}
	id, err := peer.Decode(s)
	if err != nil {
		return "", fmt.Errorf("%q is neither a peer ID nor a did:key: %w", s, err)
	}
	return id, nil
}

// PeerIDFromEd25519 returns the libp2p peer ID of an Ed25519 public key; it
// names the same publisher as DIDKey(pub).
func PeerIDFromEd25519(pub ed25519.PublicKey) (peer.ID, error) {
	pk, err := crypto.UnmarshalEd25519PublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("peer id: %w", err)
	}
	return peer.IDFromPublicKey(pk)
}

// Ed25519FromPeerID returns the Ed25519 public key embedded in a peer ID, or
// an error when the peer's key is of another type.
func Ed25519FromPeerID(id peer.ID) (ed25519.PublicKey, error) {
	pk, err := id.ExtractPublicKey()
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", id, err)
	}
	if pk.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("peer %s: key type %s, want Ed25519", id, pk.Type())
	}
	raw, err := pk.Raw()
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", id, err)
	}
	return ed25519.PublicKey(raw), nil
}

// The short form of a publisher, as a user reads and types it: an
// ellipsis and the last ShortPublisherLen characters of its peer ID
// ("…zRfVBq6e"). Ed25519 peer IDs all start with "12D3KooW", so the end
// tells them apart. Where a publisher is taken back as input, a short
// form — with or without the ellipsis ("…", or "..."), of at least
// MinPublisherSuffix characters — names the one publisher the node knows
// whose peer ID ends with it (see PublisherSuffix).
const (
	ShortPublisherLen  = 8
	MinPublisherSuffix = 6
)

// ShortPublisher returns the short form of publisher id.
func ShortPublisher(id peer.ID) string {
	s := id.String()
	if len(s) <= ShortPublisherLen {
		return s
	}
	return "…" + s[len(s)-ShortPublisherLen:]
}

// PublisherSuffix returns the peer ID suffix a short form s stands for,
// and whether s is one: at least MinPublisherSuffix characters of the
// base58 alphabet after an optional "…" or "...".
func PublisherSuffix(s string) (string, bool) {
	s, ok := strings.CutPrefix(s, "…")
	if !ok {
		s, _ = strings.CutPrefix(s, "...")
	}
	if len(s) < MinPublisherSuffix {
		return "", false
	}
	for _, r := range s {
		if !strings.ContainsRune(base58Alphabet, r) {
			return "", false
		}
	}
	return s, true
}

// base58Alphabet is base58btc's, in which peer IDs are written.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
