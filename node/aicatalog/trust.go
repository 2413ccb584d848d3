package aicatalog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The trust manifests the node signs (AI Catalog, "Trust Manifest" and
// "Verification Procedures"): one per entry, the node as contributor, a
// subject bound to the artifact by its digest, and a Signature object
// whose jws is a detached compact JWS over the JCS form of the manifest
// without signature.jws.
const (
	// ProfileDIDKey is the signer profile of the node's manifests, an
	// independently defined profile (AI Catalog, "Profile Selection"):
	// the signer is a did:key of an Ed25519 key, the JWS alg EdDSA, the
	// protected kid the signer followed by "#" and its method-specific
	// id, no jku, jwk, x5u nor x5c; the key is the one the did:key
	// encodes (no resolution). docs/bridges.md describes it.
	ProfileDIDKey = "https://github.com/lmosnode/lmosnode/blob/main/docs/bridges.md#ai-catalog-did-key-profile"
	// TypManifest is the protected typ of a manifest signature.
	TypManifest = "ai-catalog-trust-manifest+jws"
	// clockSkew is the tolerance of issuedAt in the future.
	clockSkew = 5 * time.Minute
)

// TrustManifest is one contributor's trust metadata about an entry's
// artifact (AI Catalog's trustManifests[] member).
type TrustManifest struct {
	Contributor string     `json:"contributor"`
	Subject     *Subject   `json:"subject,omitempty"`
	Signature   *Signature `json:"signature,omitempty"`
}

// Subject binds a manifest to the artifact it describes.
type Subject struct {
	Identifier string `json:"identifier"`
	Type       string `json:"type"`
	Digest     string `json:"digest,omitempty"`
	URL        string `json:"url,omitempty"`
	Version    string `json:"version,omitempty"`
}

// Signature is an AI Catalog Signature object.
type Signature struct {
	Signer    string `json:"signer"`
	Profile   string `json:"profile"`
	IssuedAt  string `json:"issuedAt"`
	ExpiresAt string `json:"expiresAt,omitempty"`
	JWS       string `json:"jws,omitempty"`
}

// Digest is the AI Catalog digest of b: "sha256:" and the lowercase hex
// of its SHA-256.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// signer signs manifests with the node's key.
type signer struct {
	key ed25519.PrivateKey
	did string
	jws jose.Signer
}

func newSigner(key ed25519.PrivateKey) (*signer, error) {
	pub := key.Public().(ed25519.PublicKey)
	opts := (&jose.SignerOptions{}).WithType(TypManifest).WithHeader("kid", lmosproto.DIDKeyVerificationMethod(pub))
	js, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key}, opts)
	if err != nil {
		return nil, err
	}
	return &signer{key: key, did: lmosproto.DIDKey(pub), jws: js}, nil
}

// manifest returns the node's signed manifest for the entry e, whose
// Digest must be set: a subject of its identifier, type, digest (and url
// when it is https, the only form a subject url takes).
func (s *signer) manifest(e *Entry, now time.Time) (TrustManifest, error) {
	m := TrustManifest{
		Contributor: s.did,
		Subject:     &Subject{Identifier: e.Identifier, Type: e.Type, Digest: e.Digest, Version: e.Version},
		Signature:   &Signature{Signer: s.did, Profile: ProfileDIDKey, IssuedAt: now.UTC().Format(time.RFC3339)},
	}
	if strings.HasPrefix(e.URL, "https://") {
		m.Subject.URL = e.URL
	}
	payload, err := manifestPayload(m)
	if err != nil {
		return m, err
	}
	obj, err := s.jws.Sign(payload)
	if err != nil {
		return m, err
	}
	if m.Signature.JWS, err = obj.DetachedCompactSerialize(); err != nil {
		return m, err
	}
	return m, nil
}

// SignEntry sets e's digest to that of artifact (the bytes its url
// serves, or the JCS form of its data) and its trust manifests to one
// signed with key at now, under ProfileDIDKey.
func SignEntry(key ed25519.PrivateKey, e *Entry, artifact []byte, now time.Time) error {
	s, err := newSigner(key)
	if err != nil {
		return err
	}
	return s.signEntry(e, artifact, now)
}

func (s *signer) signEntry(e *Entry, artifact []byte, now time.Time) error {
	e.Digest = Digest(artifact)
	m, err := s.manifest(e, now)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	e.TrustManifests = []json.RawMessage{raw}
	return nil
}

// manifestPayload is the JWS payload of m: its JCS form without
// signature.jws.
func manifestPayload(m TrustManifest) ([]byte, error) {
	sig := *m.Signature
	sig.JWS = ""
	m.Signature = &sig
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return lmosproto.Canonicalize(b)
}

// VerifyManifest verifies the manifest raw (as the catalog carries it:
// its unknown members are part of the payload) against the entry e and
// the artifact's digest (of the bytes fetched from e.URL, or of the JCS
// form of e.Data), under ProfileDIDKey, at now. It returns the
// authenticated signer. A manifest of any other profile does not verify
// (AI Catalog, "Profile Selection": no fallback).
func VerifyManifest(raw json.RawMessage, e *Entry, artifactDigest string, now time.Time) (string, error) {
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	var m TrustManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	if m.Signature == nil {
		return "", errors.New("manifest is unsigned")
	}
	if m.Signature.Profile != ProfileDIDKey {
		return "", fmt.Errorf("signer profile %q is not supported (this node verifies %s)", m.Signature.Profile, ProfileDIDKey)
	}
	if m.Signature.Signer != m.Contributor {
		return "", fmt.Errorf("signer %q is not the contributor %q", m.Signature.Signer, m.Contributor)
	}
	if err := checkTimes(m.Signature, now); err != nil {
		return "", err
	}
	if err := checkCoverage(m.Subject, e, artifactDigest); err != nil {
		return "", err
	}
	pub, err := lmosproto.ParseDIDKey(m.Signature.Signer)
	if err != nil || strings.Contains(m.Signature.Signer, "#") {
		return "", fmt.Errorf("signer %q is not a did:key of an Ed25519 key", m.Signature.Signer)
	}
	// The payload: the manifest as sent, less the immediate signature.jws
	// and additionalSignatures (AI Catalog, "Signed Payload").
	delete(generic, "additionalSignatures")
	if sig, ok := generic["signature"].(map[string]any); ok {
		delete(sig, "jws")
	}
	b, err := json.Marshal(generic)
	if err != nil {
		return "", err
	}
	payload, err := lmosproto.Canonicalize(b)
	if err != nil {
		return "", fmt.Errorf("manifest is not valid JCS input: %w", err)
	}
	if err := verifyJWS(m.Signature, pub, payload); err != nil {
		return "", err
	}
	return m.Signature.Signer, nil
}

// verifyJWS checks the detached JWS of sig over payload with pub: alg
// EdDSA, typ TypManifest, kid the signer's verification method, no key
// named by the signature itself.
func verifyJWS(sig *Signature, pub ed25519.PublicKey, payload []byte) error {
	obj, err := jose.ParseDetached(sig.JWS, payload, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return fmt.Errorf("jws: %w", err)
	}
	if len(obj.Signatures) != 1 {
		return errors.New("jws: want one signature")
	}
	h := obj.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != TypManifest {
		return fmt.Errorf("jws: typ %q, want %q", typ, TypManifest)
	}
	if h.KeyID != lmosproto.DIDKeyVerificationMethod(pub) {
		return fmt.Errorf("jws: kid %q is not the signer's key", h.KeyID)
	}
	if err := checkHeader(sig.JWS); err != nil {
		return err
	}
	if _, err := obj.Verify(pub); err != nil {
		return fmt.Errorf("jws: %w", err)
	}
	return nil
}

// checkHeader refuses a protected header that names a key source (jku,
// jwk, x5u, x5c) or b64: the profile takes the key from the did:key.
func checkHeader(compact string) error {
	seg, _, _ := strings.Cut(compact, ".")
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return fmt.Errorf("jws header: %w", err)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b, &hdr); err != nil {
		return fmt.Errorf("jws header: %w", err)
	}
	for _, k := range []string{"jku", "jwk", "x5u", "x5c", "b64"} {
		if _, ok := hdr[k]; ok {
			return fmt.Errorf("jws header: %s is not allowed (the key is the did:key's)", k)
		}
	}
	return nil
}

// checkTimes refuses a signature before issuedAt (beyond clockSkew) or
// at or after expiresAt.
func checkTimes(sig *Signature, now time.Time) error {
	issued, err := time.Parse(time.RFC3339, sig.IssuedAt)
	if err != nil {
		return fmt.Errorf("issuedAt: %w", err)
	}
	if issued.After(now.Add(clockSkew)) {
		return fmt.Errorf("issuedAt %s is in the future", sig.IssuedAt)
	}
	if sig.ExpiresAt != "" {
		exp, err := time.Parse(time.RFC3339, sig.ExpiresAt)
		if err != nil {
			return fmt.Errorf("expiresAt: %w", err)
		}
		if !exp.After(issued) || !now.Before(exp) {
			return fmt.Errorf("the signature expired at %s", sig.ExpiresAt)
		}
	}
	return nil
}

// checkCoverage is AI Catalog's Entry Release Coverage: the subject
// names the entry's identifier, type, version and digest exactly, its url
// (if any) is the entry's https url, and the artifact hashes to the
// digest.
func checkCoverage(s *Subject, e *Entry, artifactDigest string) error {
	switch {
	case s == nil:
		return errors.New("a signed manifest has no subject")
	case s.Identifier != e.Identifier || s.Type != e.Type:
		return fmt.Errorf("subject %s (%s) is not the entry %s (%s)", s.Identifier, s.Type, e.Identifier, e.Type)
	case s.Version != e.Version:
		return fmt.Errorf("subject version %q is not the entry's %q", s.Version, e.Version)
	case s.Digest != e.Digest:
		return fmt.Errorf("subject digest %q is not the entry's %q", s.Digest, e.Digest)
	case s.Digest == "" && s.URL == "":
		return errors.New("the subject binds neither a digest nor a url")
	case s.URL != "" && (s.URL != e.URL || !strings.HasPrefix(s.URL, "https://")):
		return fmt.Errorf("subject url %q is not the entry's https url", s.URL)
	case s.Digest != "" && !strings.HasPrefix(s.Digest, "sha256:"):
		return fmt.Errorf("digest %q: this node checks sha256 digests", s.Digest)
	case s.Digest != "" && s.Digest != artifactDigest:
		return fmt.Errorf("the artifact's digest %s is not the signed %s", artifactDigest, s.Digest)
	}
	return nil
}
