package did

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"

	"github.com/lmosnode/lmosnode/proto"
)

// Contexts of a document NewDocument writes.
var documentContext = []string{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"}

// NewDocument returns the DID document of did listing keys: one Multikey
// verification method per key ("<did>#<the key's did:key identifier>",
// publicKeyMultibase z6Mk…), each referenced from assertionMethod and
// authentication. It is the document an organisation hosts at
// ID.URL to vouch for its nodes' keys.
func NewDocument(did string, keys []ed25519.PublicKey) ([]byte, error) {
	if _, err := Parse(did); err != nil {
		return nil, err
	}
	type method struct {
		ID                 string `json:"id"`
		Type               string `json:"type"`
		Controller         string `json:"controller"`
		PublicKeyMultibase string `json:"publicKeyMultibase"`
	}
	doc := struct {
		Context            []string `json:"@context"`
		ID                 string   `json:"id"`
		VerificationMethod []method `json:"verificationMethod"`
		Authentication     []string `json:"authentication"`
		AssertionMethod    []string `json:"assertionMethod"`
	}{Context: documentContext, ID: did, VerificationMethod: []method{}, Authentication: []string{}, AssertionMethod: []string{}}
	for _, k := range keys {
		mb := strings.TrimPrefix(proto.DIDKey(k), "did:key:")
		id := did + "#" + mb
		doc.VerificationMethod = append(doc.VerificationMethod, method{id, "Multikey", did, mb})
		doc.Authentication = append(doc.Authentication, id)
		doc.AssertionMethod = append(doc.AssertionMethod, id)
	}
	return json.MarshalIndent(doc, "", "  ")
}
