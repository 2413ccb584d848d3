package a2abridge

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/did"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ExtensionLMOS is the URI of the card extension with which the bridge
// names the LMOS Thing behind a card (params: thingId, publisher, actions).
const ExtensionLMOS = "https://eclipse.dev/lmos/protocol/v1"

// Media types a bridged agent accepts and produces: text parts and JSON
// data parts.
var bridgeModes = []string{"text/plain", "application/json"}

// lmosParams is the params of the ExtensionLMOS card extension.
type lmosParams struct {
	ThingID   string   `json:"thingId"`
	Publisher string   `json:"publisher"`
	Actions   []string `json:"actions"`
	// Organization is the organisation the TD claims, checked
	// (docs/identity.md); absent without a claim.
	Organization *did.Organization `json:"organization,omitempty"`
}

// cardOf builds the Agent Card of the Agent td published by publisher,
// served at endpoint (the absolute URL of its JSON-RPC interface); org is
// the organisation its TD claims, checked (nil for none).
func cardOf(td *lmosproto.TD, publisher peer.ID, org *did.Organization, endpoint string, bearer bool) AgentCard {
	yes, no := true, false
	c := AgentCard{
		Name:                td.Title,
		Description:         td.Description,
		SupportedInterfaces: []AgentInterface{{URL: endpoint, ProtocolBinding: BindingJSONRPC, ProtocolVersion: ProtocolVersion}, restInterface(endpoint)},
		Version:             strconv.FormatUint(td.Seq, 10),
		Capabilities:        AgentCapabilities{Streaming: &yes, PushNotifications: &no},
		DefaultInputModes:   bridgeModes,
		DefaultOutputModes:  bridgeModes,
		Skills:              skillsOf(td),
	}
	if c.Description == "" {
		c.Description = td.Title
	}
	if td.Metadata != nil && td.Metadata.Vendor != nil && td.Metadata.Vendor.Name != "" {
		c.Provider = &AgentProvider{Organization: td.Metadata.Vendor.Name, URL: td.Metadata.Vendor.URL}
	}
	for _, l := range td.Links {
		if l.Rel == "service-doc" && c.DocumentationURL == "" {
			c.DocumentationURL = l.Href
		}
		if l.Rel == "icon" && c.IconURL == "" {
			c.IconURL = l.Href
		}
	}
	params, _ := json.Marshal(lmosParams{ThingID: td.ID, Publisher: publisher.String(), Actions: actionNames(td), Organization: org}) // strings and a bool only
	c.Capabilities.Extensions = []AgentExtension{{URI: ExtensionLMOS,
		Description: "The LMOS Thing behind this card; a message invokes one of its actions (metadata lmos:action, else its only action).",
		Params:      params}}
	if bearer {
		c.SecuritySchemes = map[string]SecurityScheme{"bearer": {HTTPAuth: &HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "The node's API token (lmosnode config apiToken)"}}}
		c.SecurityRequirements = []SecurityRequirement{{Schemes: map[string]StringList{"bearer": {}}}}
	}
	return c
}

// skillsOf maps lmos:capabilities to skills; a TD without capabilities
// gets one skill per action.
func skillsOf(td *lmosproto.TD) []AgentSkill {
	skills := []AgentSkill{}
	for _, c := range td.Capabilities {
		s := AgentSkill{ID: c.ID, Name: c.ID, Description: c.Description, Tags: []string{c.ID}, Examples: c.Examples}
		if c.Version != "" {
			s.Name = c.ID + " " + c.Version
			s.Tags = append(s.Tags, "version:"+c.Version)
		}
		if s.Description == "" {
			s.Description = td.Description
		}
		if s.Description == "" {
			s.Description = c.ID
		}
		skills = append(skills, s)
	}
	if len(skills) > 0 {
		return skills
	}
	for _, name := range actionNames(td) {
		a := td.Actions[name]
		s := AgentSkill{ID: name, Name: name, Description: a.Description, Tags: []string{"action"}}
		if a.Title != "" {
			s.Name = a.Title
		}
		if s.Description == "" {
			s.Description = s.Name
		}
		skills = append(skills, s)
	}
	return skills
}

// actionNames returns the names of td's actions, sorted.
func actionNames(td *lmosproto.TD) []string {
	names := make([]string, 0, len(td.Actions))
	for name := range td.Actions {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// signer signs cards with the node's key.
type signer struct {
	key ed25519.PrivateKey
	kid string // the key's did:key verification method
}

func newSigner(key ed25519.PrivateKey) *signer {
	return &signer{key: key, kid: lmosproto.DIDKeyVerificationMethod(key.Public().(ed25519.PublicKey))}
}

// jwsHeader is the protected header of a card signature.
type jwsHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
	Kid string `json:"kid"`
	Jku string `json:"jku,omitempty"`
}

// sign adds the node's signature to c (specification §8.4): EdDSA
// (Ed25519) over the JCS form of the card without signatures and without
// empty members; kid is the node's did:key verification method, jku the
// node's JWKS URL.
func (s *signer) sign(c *AgentCard, jku string) error {
	payload, err := canonicalCard(*c)
	if err != nil {
		return err
	}
	h, _ := json.Marshal(jwsHeader{Alg: "EdDSA", Typ: "JOSE", Kid: s.kid, Jku: jku}) // strings only
	prot := base64.RawURLEncoding.EncodeToString(h)
	input := prot + "." + base64.RawURLEncoding.EncodeToString(payload)
	sig := ed25519.Sign(s.key, []byte(input))
	c.Signatures = append(c.Signatures, AgentCardSignature{Protected: prot, Signature: base64.RawURLEncoding.EncodeToString(sig)})
	return nil
}

// VerifyCard checks that one of c's signatures is a valid EdDSA signature
// by pub; it returns the kid of that signature.
func VerifyCard(c AgentCard, pub ed25519.PublicKey) (string, error) {
	if len(c.Signatures) == 0 {
		return "", errors.New("a2a: card has no signatures")
	}
	payload, err := canonicalCard(c)
	if err != nil {
		return "", err
	}
	for _, s := range c.Signatures {
		hb, err := base64.RawURLEncoding.DecodeString(s.Protected)
		if err != nil {
			continue
		}
		var h jwsHeader
		if json.Unmarshal(hb, &h) != nil || h.Alg != "EdDSA" {
			continue
		}
		sig, err := base64.RawURLEncoding.DecodeString(s.Signature)
		if err != nil {
			continue
		}
		if ed25519.Verify(pub, []byte(s.Protected+"."+base64.RawURLEncoding.EncodeToString(payload)), sig) {
			return h.Kid, nil
		}
	}
	return "", errors.New("a2a: no signature of the card verifies")
}

// canonicalCard is the signed form of c: without signatures, members with
// default values (empty strings, arrays, objects, null) removed
// recursively, in JCS (RFC 8785).
func canonicalCard(c AgentCard) ([]byte, error) {
	c.Signatures = nil
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("a2a: card: %w", err)
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, fmt.Errorf("a2a: card: %w", err)
	}
	tree, _ = dropEmpty(tree)
	if tree == nil {
		tree = map[string]any{}
	}
	b, _ = json.Marshal(tree) // decoded JSON always encodes
	return lmosproto.Canonicalize(b)
}

// dropEmpty removes empty strings, nulls and empty arrays and objects,
// recursively; ok is false when v itself is empty.
func dropEmpty(v any) (any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case string:
		return x, x != ""
	case []any:
		out := x[:0]
		for _, e := range x {
			if e, ok := dropEmpty(e); ok {
				out = append(out, e)
			}
		}
		return out, len(out) > 0
	case map[string]any:
		for k, e := range x {
			if e, ok := dropEmpty(e); ok {
				x[k] = e
			} else {
				delete(x, k)
			}
		}
		return x, len(x) > 0
	}
	return v, true
}

// jwk is the JSON Web Key (RFC 8037) of the node's Ed25519 key.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// jwks is the node's JSON Web Key Set: the key its cards are signed with.
func (s *signer) jwks() map[string][]jwk {
	pub := s.key.Public().(ed25519.PublicKey)
	return map[string][]jwk{"keys": {{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub), Kid: s.kid, Alg: "EdDSA", Use: "sig"}}}
}
