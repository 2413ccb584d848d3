package did

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/multiformats/go-multibase"

	"github.com/lmosnode/lmosnode/proto"
)

// Document is the part of a DID document lmosnode reads.
type Document struct {
	// ID is the document's id, the DID it describes.
	ID string
	// VerificationMethods are the methods of verificationMethod and those
	// embedded in a relationship, in document order.
	VerificationMethods []VerificationMethod
	// Authentication and AssertionMethod are the ids of the methods
	// authorised for each relationship (relative references expanded).
	Authentication  []string
	AssertionMethod []string
	// Deactivated is the document's "deactivated" member: a deactivated
	// DID authorises no key (HasAssertionKey and HasAuthenticationKey
	// answer false).
	Deactivated bool
	// Raw is the document as served.
	Raw json.RawMessage
	// Fetched is when the document was fetched, Expires until when the
	// cache keeps it.
	Fetched, Expires time.Time
}

// VerificationMethod is one verification method of a document.
type VerificationMethod struct {
	ID, Type, Controller string
	// PublicKeyMultibase and PublicKeyJwk are as written.
	PublicKeyMultibase string          `json:"publicKeyMultibase,omitempty"`
	PublicKeyJwk       json.RawMessage `json:"publicKeyJwk,omitempty"`
	// PublicKey is the Ed25519 key the method carries, nil if it carries
	// another kind of key.
	PublicKey ed25519.PublicKey `json:"-"`
}

// wireMethod is a verification method as written.
type wireMethod struct {
	ID                 string          `json:"id"`
	Type               string          `json:"type"`
	Controller         string          `json:"controller"`
	PublicKeyMultibase string          `json:"publicKeyMultibase"`
	PublicKeyJwk       json.RawMessage `json:"publicKeyJwk"`
}

// wireDocument is a DID document as written: relationships are strings or
// embedded methods.
type wireDocument struct {
	ID                 string            `json:"id"`
	VerificationMethod []wireMethod      `json:"verificationMethod"`
	Authentication     []json.RawMessage `json:"authentication"`
	AssertionMethod    []json.RawMessage `json:"assertionMethod"`
	Deactivated        bool              `json:"deactivated"`
}

// ParseDocument reads a DID document and checks that its id is did (after
// which relative references are expanded against it).
func ParseDocument(did string, raw []byte) (*Document, error) {
	var w wireDocument
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("did document: %w", err)
	}
	if w.ID != did {
		return nil, fmt.Errorf("did document: id %q is not the DID resolved, %q", w.ID, did)
	}
	doc := &Document{ID: w.ID, Deactivated: w.Deactivated, Raw: json.RawMessage(raw)}
	for _, m := range w.VerificationMethod {
		vm, err := doc.method(m)
		if err != nil {
			return nil, err
		}
		doc.VerificationMethods = append(doc.VerificationMethods, vm)
	}
	var err error
	if doc.Authentication, err = doc.relationship("authentication", w.Authentication); err != nil {
		return nil, err
	}
	if doc.AssertionMethod, err = doc.relationship("assertionMethod", w.AssertionMethod); err != nil {
		return nil, err
	}
	return doc, nil
}

// expand turns a relative DID URL ("#key-1") into an absolute one.
func (d *Document) expand(ref string) string {
	if strings.HasPrefix(ref, "#") {
		return d.ID + ref
	}
	return ref
}

// method reads one verification method and its Ed25519 key, if any.
func (d *Document) method(m wireMethod) (VerificationMethod, error) {
	if m.ID == "" {
		return VerificationMethod{}, errors.New("did document: a verification method has no id")
	}
	vm := VerificationMethod{ID: d.expand(m.ID), Type: m.Type, Controller: m.Controller,
		PublicKeyMultibase: m.PublicKeyMultibase, PublicKeyJwk: m.PublicKeyJwk}
	var err error
	switch {
	case m.PublicKeyMultibase != "":
		vm.PublicKey, err = multikeyEd25519(m.Type, m.PublicKeyMultibase)
	case len(m.PublicKeyJwk) > 0:
		vm.PublicKey, err = jwkEd25519(m.PublicKeyJwk)
	}
	if err != nil {
		return VerificationMethod{}, fmt.Errorf("did document: verification method %q: %w", vm.ID, err)
	}
	return vm, nil
}

// relationship reads a verification relationship: references and
// embedded methods (added to the document's methods).
func (d *Document) relationship(name string, entries []json.RawMessage) ([]string, error) {
	var ids []string
	for _, e := range entries {
		var ref string
		if json.Unmarshal(e, &ref) == nil {
			ids = append(ids, d.expand(ref))
			continue
		}
		var m wireMethod
		if err := json.Unmarshal(e, &m); err != nil {
			return nil, fmt.Errorf("did document: %s: an entry is neither a reference nor a method", name)
		}
		vm, err := d.method(m)
		if err != nil {
			return nil, err
		}
		d.VerificationMethods = append(d.VerificationMethods, vm)
		ids = append(ids, vm.ID)
	}
	return ids, nil
}

// multikeyEd25519 decodes an Ed25519 publicKeyMultibase: a Multikey (or
// Ed25519VerificationKey2020) value, multicodec 0xed + 32 bytes, or the
// bare 32 bytes of Ed25519VerificationKey2018-style documents. Another key
// type gives a nil key and no error.
func multikeyEd25519(typ, mb string) (ed25519.PublicKey, error) {
	_, raw, err := multibase.Decode(mb)
	if err != nil {
		return nil, fmt.Errorf("publicKeyMultibase: %w", err)
	}
	if len(raw) == 2+ed25519.PublicKeySize && raw[0] == 0xed && raw[1] == 0x01 {
		return ed25519.PublicKey(raw[2:]), nil
	}
	if len(raw) == ed25519.PublicKeySize && strings.HasPrefix(typ, "Ed25519") {
		return ed25519.PublicKey(raw), nil
	}
	return nil, nil
}

// jwk is the part of a JWK an Ed25519 public key has.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
}

// jwkEd25519 decodes an OKP/Ed25519 publicKeyJwk; another key type gives
// a nil key and no error.
func jwkEd25519(raw json.RawMessage) (ed25519.PublicKey, error) {
	var k jwk
	if err := json.Unmarshal(raw, &k); err != nil {
		return nil, fmt.Errorf("publicKeyJwk: %w", err)
	}
	if k.Kty != "OKP" || k.Crv != "Ed25519" {
		return nil, nil
	}
	x, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil, errors.New("publicKeyJwk: x is not a base64url Ed25519 key")
	}
	return ed25519.PublicKey(x), nil
}

// Method returns the verification method with the given id (relative ids
// are expanded).
func (d *Document) Method(id string) (VerificationMethod, bool) {
	id = d.expand(id)
	for _, m := range d.VerificationMethods {
		if m.ID == id {
			return m, true
		}
	}
	return VerificationMethod{}, false
}

// keyIn returns the id of a method of rel that carries pub.
func (d *Document) keyIn(rel []string, pub ed25519.PublicKey) (string, bool) {
	if d.Deactivated {
		return "", false
	}
	for _, id := range rel {
		if m, ok := d.Method(id); ok && m.PublicKey != nil && m.PublicKey.Equal(pub) {
			return m.ID, true
		}
	}
	return "", false
}

// HasAssertionKey returns the id of the assertionMethod method that carries
// pub, and whether there is one: the key may make claims for the DID.
func (d *Document) HasAssertionKey(pub ed25519.PublicKey) (string, bool) {
	return d.keyIn(d.AssertionMethod, pub)
}

// HasAuthenticationKey returns the id of the authentication method that
// carries pub, and whether there is one.
func (d *Document) HasAuthenticationKey(pub ed25519.PublicKey) (string, bool) {
	return d.keyIn(d.Authentication, pub)
}

// JWKThumbprint is the RFC 7638 thumbprint (SHA-256, base64url without
// padding) of an Ed25519 public key's JWK: the fingerprint of a did:wba
// e1_ path segment.
func JWKThumbprint(pub ed25519.PublicKey) string {
	in := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(in))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// checkE1Binding verifies an e1_ path DID's document (ANP did:wba §2.5.2):
// its proof verifies, by one of its own Ed25519 methods, whose thumbprint
// is the DID's fingerprint.
func (d *Document) checkE1Binding(fingerprint string) error {
	signer, err := proto.VerifyDocumentKey(d.Raw, func(vm string) (ed25519.PublicKey, error) {
		m, ok := d.Method(vm)
		if !ok || m.PublicKey == nil {
			return nil, fmt.Errorf("%q is not an Ed25519 method of the document", vm)
		}
		return m.PublicKey, nil
	})
	if err != nil {
		return fmt.Errorf("did:wba e1_ binding: %w", err)
	}
	if got := JWKThumbprint(signer.PublicKey); got != fingerprint {
		return fmt.Errorf("did:wba e1_ binding: the proof's key has thumbprint %s, the DID names %s", got, fingerprint)
	}
	return nil
}
