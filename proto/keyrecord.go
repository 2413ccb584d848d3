package proto

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Key records: the signed statements that retire a node key
// (docs/wire.md, "Key rotation and revocation").
const (
	// TypeKeyRotation is the "type" of a rotation record: the key
	// ("key") is replaced by its successor ("successor"); proved by a
	// proof set of two eddsa-jcs-2022 proofs, the key's first, then the
	// successor's.
	TypeKeyRotation = "lmos:KeyRotation"
	// TypeKeyRevocation is the "type" of a revocation record: the key
	// ("key") is revoked; proved by one proof of the key itself, or of its
	// successor, with the rotation that names it embedded ("rotation").
	TypeKeyRevocation = "lmos:KeyRevocation"
	// MaxKeyRecordSize bounds a key record (a revocation with its
	// rotation embedded is about 1.5 KiB).
	MaxKeyRecordSize = 4 << 10
	// MaxRevocationReason bounds a revocation's "reason" (bytes).
	MaxRevocationReason = 256
)

// ErrBadKeyRecord is wrapped by every error of ParseKeyRecord.
var ErrBadKeyRecord = errors.New("bad key record")

// A KeyRecord is a verified rotation or revocation record. It is immutable
// once made.
type KeyRecord struct {
	// Raw is the signed document as it travels.
	Raw []byte
	// Type is TypeKeyRotation or TypeKeyRevocation.
	Type string
	// Key is the key retired: rotated away from, or revoked.
	Key peer.ID
	// Successor is a rotation's new key; for a revocation signed by the
	// successor, the successor; else empty.
	Successor peer.ID
	// Created is the time of the key's own proof (a rotation), or of the
	// revocation's proof.
	Created time.Time
	// Reason is a revocation's free text ("" if none).
	Reason string
	// Rotation is the rotation embedded in a revocation signed by the
	// successor; nil otherwise.
	Rotation *KeyRecord
}

// Revocation reports whether r revokes its key.
func (r *KeyRecord) Revocation() bool { return r.Type == TypeKeyRevocation }

// keyRecordWire is the unsecured form of both kinds.
type keyRecordWire struct {
	Type      string          `json:"type"`
	Key       string          `json:"key"`
	Successor string          `json:"successor,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Rotation  json.RawMessage `json:"rotation,omitempty"`
}

// SignRotation signs the rotation of key old to key successor, with a
// proof of each (created now).
func SignRotation(old, successor ed25519.PrivateKey, now time.Time) (*KeyRecord, error) {
	doc, err := json.Marshal(keyRecordWire{
		Type:      TypeKeyRotation,
		Key:       DIDKey(old.Public().(ed25519.PublicKey)),
		Successor: DIDKey(successor.Public().(ed25519.PublicKey)),
	})
	if err != nil {
		return nil, fmt.Errorf("sign rotation: %w", err)
	}
	var proofs [][]byte
	for _, k := range []ed25519.PrivateKey{old, successor} {
		signed, err := SignDocument(doc, k, now)
		if err != nil {
			return nil, fmt.Errorf("sign rotation: %w", err)
		}
		obj, err := parseDocument(signed)
		if err != nil {
			return nil, fmt.Errorf("sign rotation: %w", err)
		}
		p, _ := obj.get(docKeyProof)
		proofs = append(proofs, p)
	}
	unsecured, err := parseDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("sign rotation: %w", err)
	}
	set := append(append(append([]byte{'['}, proofs[0]...), ','), proofs[1]...)
	set = append(set, ']')
	return ParseKeyRecord(unsecured.with(docKeyProof, set).marshal())
}

// SignRevocation signs the revocation of the key of signer. With rotation
// nil, signer is the key revoked; else signer is rotation's successor and
// the key revoked is the rotation's old key (a leaked key revoked after
// the rotation away from it). reason is optional free text.
func SignRevocation(signer ed25519.PrivateKey, rotation *KeyRecord, reason string, now time.Time) (*KeyRecord, error) {
	w := keyRecordWire{Type: TypeKeyRevocation, Key: DIDKey(signer.Public().(ed25519.PublicKey)), Reason: reason}
	if rotation != nil {
		if rotation.Revocation() {
			return nil, errors.New("sign revocation: the embedded record is a revocation, want a rotation")
		}
		w.Key, w.Rotation = didOf(rotation.Key), rotation.Raw
	}
	doc, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("sign revocation: %w", err)
	}
	signed, err := SignDocument(doc, signer, now)
	if err != nil {
		return nil, fmt.Errorf("sign revocation: %w", err)
	}
	return ParseKeyRecord(signed)
}

// peerOfDIDKey parses the did:key s of member at.
func peerOfDIDKey(at, s string) (peer.ID, error) {
	if !strings.HasPrefix(s, didKeyPrefix) {
		return "", fmt.Errorf("%s: %q is not a did:key", at, s)
	}
	p, err := ParsePublisher(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	return p, nil
}

// didOf is the did:key of an Ed25519 peer ID ("" if it is none).
func didOf(p peer.ID) string {
	pub, err := Ed25519FromPeerID(p)
	if err != nil {
		return ""
	}
	return DIDKey(pub)
}

// ParseKeyRecord checks a rotation or revocation record from anywhere and
// returns it: the size is bounded, the members are exactly those of its
// type, and its proofs verify by the keys its type requires.
func ParseKeyRecord(raw []byte) (*KeyRecord, error) {
	rec, err := parseKeyRecord(raw, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKeyRecord, err)
	}
	return rec, nil
}

func parseKeyRecord(raw []byte, allowEmbedded bool) (*KeyRecord, error) {
	if len(raw) > MaxKeyRecordSize {
		return nil, fmt.Errorf("%d bytes exceeds the limit of %d", len(raw), MaxKeyRecordSize)
	}
	secured, err := parseDocument(raw)
	if err != nil {
		return nil, err
	}
	var w keyRecordWire
	dec := json.NewDecoder(bytes.NewReader(secured.without(docKeyProof).marshal()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	key, err := peerOfDIDKey("/key", w.Key)
	if err != nil {
		return nil, err
	}
	rec := &KeyRecord{Raw: bytes.Clone(raw), Type: w.Type, Key: key}
	switch w.Type {
	case TypeKeyRotation:
		return rec, parseRotation(rec, secured, w)
	case TypeKeyRevocation:
		return rec, parseRevocation(rec, raw, w, allowEmbedded)
	}
	return nil, fmt.Errorf("/type: %q, want %q or %q", w.Type, TypeKeyRotation, TypeKeyRevocation)
}

// parseRotation checks the proof set of a rotation: two proofs, by the
// key and by its successor, in that order.
func parseRotation(rec *KeyRecord, secured orderedObject, w keyRecordWire) error {
	if w.Reason != "" || w.Rotation != nil {
		return errors.New("a rotation has no reason or rotation member")
	}
	successor, err := peerOfDIDKey("/successor", w.Successor)
	if err != nil {
		return err
	}
	if successor == rec.Key {
		return errors.New("/successor: the key is its own successor")
	}
	rawSet, _ := secured.get(docKeyProof)
	var set []json.RawMessage
	if err := json.Unmarshal(rawSet, &set); err != nil || len(set) != 2 {
		return errors.New("/proof: want a proof set of two proofs (the key's, then the successor's)")
	}
	unsecured := secured.without(docKeyProof)
	for i, want := range []string{w.Key, w.Successor} {
		signer, err := VerifyDocument(unsecured.with(docKeyProof, set[i]).marshal())
		if err != nil {
			return fmt.Errorf("/proof/%d: %w", i, err)
		}
		if signer.DID != want {
			return fmt.Errorf("/proof/%d: signed by %s, want %s", i, signer.DID, want)
		}
		if signer.Created.IsZero() {
			return fmt.Errorf("/proof/%d: no created time", i)
		}
		if i == 0 {
			rec.Created = signer.Created
		}
	}
	rec.Successor = successor
	return nil
}

// parseRevocation checks a revocation: signed by its key, or by the
// successor of the rotation it embeds.
func parseRevocation(rec *KeyRecord, raw []byte, w keyRecordWire, allowEmbedded bool) error {
	if w.Successor != "" {
		return errors.New("/successor: a revocation has none")
	}
	if len(w.Reason) > MaxRevocationReason || !utf8.ValidString(w.Reason) {
		return fmt.Errorf("/reason: %d bytes, at most %d of UTF-8", len(w.Reason), MaxRevocationReason)
	}
	signer, err := VerifyDocument(raw)
	if err != nil {
		return fmt.Errorf("/proof: %w", err)
	}
	if signer.Created.IsZero() {
		return errors.New("/proof: no created time")
	}
	rec.Created, rec.Reason = signer.Created, w.Reason
	if w.Rotation == nil {
		if signer.PeerID != rec.Key {
			return fmt.Errorf("/proof: signed by %s, want the key revoked, %s", signer.DID, w.Key)
		}
		return nil
	}
	if !allowEmbedded {
		return errors.New("/rotation: a revocation may not be embedded")
	}
	rot, err := parseKeyRecord(w.Rotation, false)
	if err != nil {
		return fmt.Errorf("/rotation: %w", err)
	}
	if rot.Revocation() || rot.Key != rec.Key {
		return errors.New("/rotation: not a rotation of the key revoked")
	}
	if signer.PeerID != rot.Successor {
		return fmt.Errorf("/proof: signed by %s, want the key's successor", signer.DID)
	}
	rec.Rotation, rec.Successor = rot, rot.Successor
	return nil
}
