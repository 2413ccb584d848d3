package a2abridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-jose/go-jose/v4"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The signature of an imported card (specification §8.4): a JWS over the
// JCS form of the card without its signatures, checked with a key the
// operator pins (ImportRequest.Keys) or one the card's own https origin
// serves (the protected header's jku, on exactly the scheme, host and
// port of the card URL). A jku anywhere else is not followed: it would let
// whoever serves the card name their own key.

// States of an imported card's signature (CardTrust.Status).
const (
	// CardVerified: a signature verified with a pinned or same-origin key.
	CardVerified = "verified"
	// CardUnsigned: the card has no signatures.
	CardUnsigned = "unsigned"
	// CardUnverified: the card is signed but no signature verified with a
	// key the node trusts.
	CardUnverified = "unverified"
)

// PropCardSignature is the member of an imported agent's TD that records
// its card's CardTrust.
const PropCardSignature = "lmos:cardSignature"

// CardTrust is what the check of a card's signatures found.
type CardTrust struct {
	// Status is CardVerified, CardUnsigned or CardUnverified.
	Status string `json:"status"`
	// Kid is the key id of the signature that verified.
	Kid string `json:"kid,omitempty"`
	// Key tells where the key came from: "pinned", or the URL of the JWKS
	// on the card's origin (jku).
	Key string `json:"key,omitempty"`
	// Problem tells why a signed card is not verified.
	Problem string `json:"problem,omitempty"`
}

// cardAlgs are the JWS algorithms a card signature may use.
var cardAlgs = []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256, jose.ES384, jose.ES512,
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}

// maxJWKS bounds a JWKS fetched from a card's origin.
const maxJWKS = 64 << 10

// keySourcePinned is CardTrust.Key for a pinned key.
const keySourcePinned = "pinned"

// ParseKeys reads the keys an operator pins: a JWK or a JWK Set (JSON),
// public keys only (a private key's public part is taken).
func ParseKeys(b []byte) ([]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil || len(set.Keys) == 0 {
		var k jose.JSONWebKey
		if err := json.Unmarshal(b, &k); err != nil {
			return nil, fmt.Errorf("a2a: keys: neither a JWK nor a JWK Set: %w", err)
		}
		set.Keys = []jose.JSONWebKey{k}
	}
	out := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, k := range set.Keys {
		pub := k.Public()
		if !pub.Valid() {
			return nil, fmt.Errorf("a2a: keys: key %q is not a public signing key", k.KeyID)
		}
		out = append(out, pub)
	}
	return out, nil
}

// CheckCard checks the signatures of the card raw, as read from cardURL,
// as an import does: with the pinned keys, and with the keys of a jku on
// the card's own https origin (read with the Client's HTTP client).
func (c *Client) CheckCard(ctx context.Context, raw []byte, cardURL string, pinned []jose.JSONWebKey) CardTrust {
	var card AgentCard
	if err := json.Unmarshal(raw, &card); err != nil {
		return CardTrust{Status: CardUnverified, Problem: fmt.Sprintf("a2a: card: %v", err)}
	}
	return c.verifyCard(ctx, raw, card, cardURL, pinned)
}

// verifyCard checks the signatures of card, read as raw from cardURL,
// with the pinned keys and the keys of a same-origin jku.
func (c *Client) verifyCard(ctx context.Context, raw []byte, card AgentCard, cardURL string, pinned []jose.JSONWebKey) CardTrust {
	if len(card.Signatures) == 0 {
		return CardTrust{Status: CardUnsigned}
	}
	payloads, err := signedForms(raw, card)
	if err != nil {
		return CardTrust{Status: CardUnverified, Problem: err.Error()}
	}
	var problems []string
	for _, s := range card.Signatures {
		jws, err := jose.ParseDetached(s.Protected+".."+s.Signature, payloads[0], cardAlgs)
		if err != nil {
			problems = append(problems, fmt.Sprintf("a signature: %v", err))
			continue
		}
		h := jws.Signatures[0].Protected
		if verifies(jws, payloads, keysOf(pinned, h.KeyID)) {
			return CardTrust{Status: CardVerified, Kid: h.KeyID, Key: keySourcePinned}
		}
		jku, _ := h.ExtraHeaders["jku"].(string)
		keys, err := c.originKeys(ctx, jku, cardURL, h.KeyID)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("signature by %q: %v", h.KeyID, err))
		case verifies(jws, payloads, keys):
			return CardTrust{Status: CardVerified, Kid: h.KeyID, Key: jku}
		default:
			problems = append(problems, fmt.Sprintf("signature by %q: does not verify with the keys of %s", h.KeyID, jku))
		}
	}
	return CardTrust{Status: CardUnverified, Problem: strings.Join(problems, "; ")}
}

// verifies reports whether jws is a signature of one of payloads by one
// of keys.
func verifies(jws *jose.JSONWebSignature, payloads [][]byte, keys []jose.JSONWebKey) bool {
	for _, k := range keys {
		for _, p := range payloads {
			if jws.DetachedVerify(p, k) == nil {
				return true
			}
		}
	}
	return false
}

// keysOf are the keys with id kid, and those without an id.
func keysOf(keys []jose.JSONWebKey, kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if k.KeyID == "" || k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}

// originKeys fetches the keys of id kid from jku, which must be on the
// https origin of cardURL; redirects must stay on it.
func (c *Client) originKeys(ctx context.Context, jku, cardURL, kid string) ([]jose.JSONWebKey, error) {
	if jku == "" {
		return nil, errors.New("no pinned key has its kid and its header names no jku")
	}
	card, err := url.Parse(cardURL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(jku)
	if err != nil || !sameHTTPSOrigin(u, card) {
		return nil, fmt.Errorf("its jku %q is not on the card's https origin; only a key the operator pins or one that origin serves is trusted", jku)
	}
	hc := *c.http
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameHTTPSOrigin(req.URL, card) || len(via) >= 5 {
			return fmt.Errorf("jku %s redirects to %s, off the card's origin", jku, req.URL.Redacted())
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jku, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jku: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jku %s: HTTP %d", jku, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS))
	if err != nil {
		return nil, fmt.Errorf("jku %s: %w", jku, err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("jku %s: %w", jku, err)
	}
	if kid == "" {
		return set.Keys, nil
	}
	return set.Key(kid), nil
}

// sameHTTPSOrigin reports whether u is an https URL without user
// information on the scheme, host and port of ref, an https URL.
func sameHTTPSOrigin(u, ref *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return "443"
	}
	return strings.EqualFold(u.Scheme, "https") && strings.EqualFold(ref.Scheme, "https") && u.User == nil &&
		strings.EqualFold(u.Hostname(), ref.Hostname()) && port(u) == port(ref)
}

// signedForms are the forms of a card a signature may cover, in JCS, with
// default values and the signatures removed: the card as served (raw,
// every member), and the card as the bridge reads it (AgentCard, what an
// import uses), which is what a signer that canonicalises through its
// own model of the card signs when the served card has more members.
func signedForms(raw []byte, card AgentCard) ([][]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var tree map[string]any
	if err := d.Decode(&tree); err != nil {
		return nil, fmt.Errorf("a2a: card: %w", err)
	}
	delete(tree, "signatures")
	cleaned, _ := dropEmpty(tree)
	if cleaned == nil {
		cleaned = map[string]any{}
	}
	b, _ := json.Marshal(cleaned) // decoded JSON always encodes
	asServed, err := lmosproto.Canonicalize(b)
	if err != nil {
		return nil, fmt.Errorf("a2a: card: %w", err)
	}
	asRead, err := canonicalCard(card)
	if err != nil || bytes.Equal(asRead, asServed) {
		return [][]byte{asServed}, nil //nolint:nilerr // the served form is checked alone
	}
	return [][]byte{asServed, asRead}, nil
}
