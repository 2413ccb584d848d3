package anp

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The node's did:wba identity (ANP-03). The configuration names the
// DID's domain and path (did:wba:agents.example.com:node:alpha); a path
// DID gets the e1_ segment that binds the node's Ed25519 key (§2.2.2)
// appended unless it ends with one already, which must then be the node
// key's. The document lists that key as a Multikey for authentication
// and assertionMethod and carries the eddsa-jcs-2022 proof the e1_
// profile requires, made with it.

// MethodPrefix starts every did:wba DID.
const MethodPrefix = "did:wba:"

// keyFragment names the node key in its document.
const keyFragment = "#key-1"

// Fingerprint is the e1_ path segment of pub: "e1_" and the base64url
// RFC 7638 thumbprint of its OKP JWK.
func Fingerprint(pub ed25519.PublicKey) string {
	jwk := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(jwk))
	return "e1_" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// WBA is a parsed did:wba DID.
type WBA struct {
	// DID is the DID.
	DID string
	// Host is the domain, with its port if the DID names one.
	Host string
	// Path is the segments after the domain; empty for a domain DID.
	Path []string
}

// ParseWBA parses a did:wba DID (ANP-03 §2.2): a domain name, not an IP
// address, with an optional percent-encoded port, and path segments.
func ParseWBA(did string) (WBA, error) {
	rest, ok := strings.CutPrefix(did, MethodPrefix)
	if !ok {
		return WBA{}, fmt.Errorf("did %q: not a did:wba DID", did)
	}
	parts := strings.Split(rest, ":")
	host, err := url.PathUnescape(parts[0])
	if err != nil {
		return WBA{}, fmt.Errorf("did %q: domain: %w", did, err)
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = host, ""
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return WBA{}, fmt.Errorf("did %q: an IP address is not a did:wba domain", did)
	}
	if !validDomain(name) || (port != "" && strings.Trim(port, "0123456789") != "") {
		return WBA{}, fmt.Errorf("did %q: %q is not a domain name", did, host)
	}
	for _, seg := range parts[1:] {
		if seg == "" || strings.Trim(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" {
			return WBA{}, fmt.Errorf("did %q: path segment %q", did, seg)
		}
	}
	return WBA{DID: did, Host: strings.ToLower(host), Path: parts[1:]}, nil
}

// validDomain reports whether name is a DNS name of letters, digits and
// hyphens with at least two labels.
func validDomain(name string) bool {
	labels := strings.Split(name, ".")
	if len(labels) < 2 || len(name) > 253 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.Trim(strings.ToLower(l), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
			strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return false
		}
	}
	return true
}

// DocumentPath is the path of the DID's document on its host (§2.5.2):
// /.well-known/did.json for a domain DID, /<path>/did.json otherwise.
func (w WBA) DocumentPath() string {
	if len(w.Path) == 0 {
		return "/.well-known/did.json"
	}
	return "/" + strings.Join(w.Path, "/") + "/did.json"
}

// DocumentURL is the HTTPS URL of the DID's document.
func (w WBA) DocumentURL() string { return "https://" + w.Host + w.DocumentPath() }

// Identity is the node's did:wba identity: its DID, the key's DID URL
// and its signed DID document.
type Identity struct {
	WBA
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
	id := &Identity{WBA: w, KeyID: w.DID + keyFragment, key: key}
	if id.doc, err = id.document(pub, created); err != nil {
		return nil, err
	}
	return id, nil
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
			ServiceEndpoint: "https://" + id.Host + PathDescriptions}},
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return lmosproto.SignDocumentAs(b, id.key, id.KeyID, created)
}

// ErrNoKey is the error of a DID document that does not authorize the
// key a signature names for authentication.
var ErrNoKey = errors.New("the DID document does not authorize this key for authentication")
