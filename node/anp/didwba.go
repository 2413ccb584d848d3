package anp

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/lmosnode/lmosnode/node/did"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The node's did:wba identity (ANP-03). The configuration names the
// DID's domain and path (did:wba:agents.example.com:node:alpha); a path
// DID gets the e1_ segment that binds the node's Ed25519 key (§2.2.2)
// appended unless it ends with one already, which must then be the node
// key's. The document lists that key as a Multikey for authentication
// and assertionMethod and carries the eddsa-jcs-2022 proof the e1_
// profile requires, made with it.

// keyFragment names the node key in its document.
const keyFragment = "#key-1"

// Fingerprint is the e1_ path segment of pub: "e1_" and the RFC 7638
// thumbprint of its OKP JWK.
func Fingerprint(pub ed25519.PublicKey) string { return "e1_" + did.JWKThumbprint(pub) }

// ParseWBA parses a did:wba DID (node/did's rules: a domain name, never
// an IP address, an optional percent-encoded port, path segments).
func ParseWBA(s string) (did.ID, error) {
	id, err := did.Parse(s)
	if err == nil && id.Method != did.MethodWBA {
		err = fmt.Errorf("anp: %q is not a did:wba DID", s)
	}
	return id, err
}

// Identity is the node's did:wba identity: its DID, the key's DID URL
// and its signed DID document.
type Identity struct {
	did.ID
	// KeyID is the DID URL of the node key, the keyid of its signatures.
	KeyID string
	key   ed25519.PrivateKey
	doc   []byte
}

// NewIdentity makes the did:wba identity of key from the configured DID
// (see the comment above Fingerprint); base is the HTTPS URL the
// document names as the node's (its agent descriptions), empty for
// https://<host>.
func NewIdentity(configured string, key ed25519.PrivateKey, created time.Time) (*Identity, error) {
	w, err := ParseWBA(configured)
	if err != nil {
		return nil, err
	}

	pub := key.Public().(ed25519.PublicKey)
	fp := Fingerprint(pub)
	if n := len(w.Path); n > 0 {
		if last := w.Path[n-1]; strings.HasPrefix(last, "e1_") {
			if last != fp {
				return nil, fmt.Errorf("did %q: its e1_ segment is not the node key's (%s)", configured, fp)
			}
		} else {
			w.Path = append(w.Path, fp)
			w.DID += ":" + fp
		}
	}
	id := &Identity{ID: w, KeyID: w.DID + keyFragment, key: key}
	if id.doc, err = id.document(pub, created); err != nil {
		return nil, err
	}
	return id, nil
}

// DocumentPath is the path of the DID's document on its host (ANP-03
// §2.5.2): /.well-known/did.json for a domain DID, /<path>/did.json
// otherwise.
func (id *Identity) DocumentPath() string {
	u, _ := url.Parse(id.URL()) // node/did builds it
	return u.Path
}

// Document is the node's DID document, signed.
func (id *Identity) Document() []byte { return id.doc }

// Key is the node key.
func (id *Identity) Key() ed25519.PrivateKey { return id.key }

// didDocument is the unsigned DID document.
type didDocument struct {
	Context            []string             `json:"@context"`
	ID                 string               `json:"id"`
	VerificationMethod []verificationMethod `json:"verificationMethod"`
	Authentication     []string             `json:"authentication"`
	AssertionMethod    []string             `json:"assertionMethod"`
	Service            []service            `json:"service,omitempty"`
}

type verificationMethod struct {
	ID                 string `json:"id"`
	Type               string `json:"type"`
	Controller         string `json:"controller"`
	PublicKeyMultibase string `json:"publicKeyMultibase"`
}

type service struct {
	ID              string `json:"id"`
	Type            string `json:"type"`
	ServiceEndpoint string `json:"serviceEndpoint"`
}

func (id *Identity) document(pub ed25519.PublicKey, created time.Time) ([]byte, error) {
	mb := strings.TrimPrefix(lmosproto.DIDKey(pub), "did:key:")
	d := didDocument{
		Context: []string{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/data-integrity/v2", "https://w3id.org/security/multikey/v1"},
		ID:      id.DID,
		VerificationMethod: []verificationMethod{{ID: id.KeyID, Type: "Multikey", Controller: id.DID,
			PublicKeyMultibase: mb}},
		Authentication:  []string{id.KeyID},
		AssertionMethod: []string{id.KeyID},
		Service: []service{{ID: id.DID + "#ad", Type: "AgentDescription",
			ServiceEndpoint: strings.TrimSuffix(id.URL(), id.DocumentPath()) + PathDescriptions}},
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return lmosproto.SignDocumentAs(b, id.key, id.KeyID, created)
}
