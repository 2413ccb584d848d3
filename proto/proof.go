package proto

// W3C Data Integrity proofs with the cryptosuite eddsa-jcs-2022
// ("Data Integrity EdDSA Cryptosuites v1.0", section 3.3), over any JSON
// object document; lmosnode signs Thing Descriptions with it.
//
// The algorithms, as this file implements them:
//
//	transformedData = JCS(unsecuredDocument)            // document without "proof"
//	proofConfig     = JCS(proof options)                // proof without "proofValue",
//	                                                    // @context = document's @context
//	hashData        = SHA-256(proofConfig) ‖ SHA-256(transformedData)
//	proofValue      = "z" + base58btc(Ed25519-Sign(privateKey, hashData))
//
// JCS is the JSON Canonicalization Scheme, RFC 8785 (github.com/gowebpki/jcs).
//
// @context. Our reading of the spec text:
//
//   - 3.3.5 "Proof Configuration (eddsa-jcs-2022)": the proof configuration is
//     a clone of the proof options, and "if unsecuredDocument.@context is
//     present, set proofConfig.@context to unsecuredDocument.@context". So the
//     document's @context is always part of the signed proof configuration,
//     whether or not the proof object itself carries an @context.
//   - 3.3.1 "Create Proof": the proof is a clone of the options (not of the
//     configuration) plus proofValue, so a proof may or may not carry
//     @context, depending on the options the signer chose.
//   - 3.3.2 "Verify Proof", step 4: if proofOptions.@context exists, the
//     secured document's @context must start with all of its values in the
//     same order, and unsecuredDocument.@context is set to
//     proofOptions.@context before transforming and configuring.
//
// SignDocument puts a copy of the document's @context into the proof options,
// so the proof object minus proofValue is exactly the signed configuration
// (a reader can see what was signed) and a verifier following either branch
// of 3.3.2 hashes the same bytes. VerifyDocument accepts proofs with and
// without @context, but is stricter than step 4: a proof's @context must be
// equal (after JCS) to the document's, not merely a prefix of it. With the
// prefix rule, contexts appended to a signed TD would not be covered by the
// signature, yet they change what its terms mean; lmosnode rejects any change
// to a signed document. Every proof VerifyDocument accepts is accepted by a
// verifier that follows the spec to the letter.
//
// The spec's own test vector confirms this reading: its eddsa-jcs-2022
// proofValue for the "alumni credential" is reproduced only with the
// document's @context in the proof configuration (TestProofKnownAnswerVCDI).
//
// Beyond the spec, verification rejects what the spec leaves to the
// application: proof sets (a "proof" array; lmosnode signs with exactly one
// proof), proof purposes other than assertionMethod, verification methods
// other than a did:key Ed25519 verification method URL, and documents that
// are not I-JSON (duplicate member names, invalid UTF-8, lone surrogates,
// numbers out of double range), which JCS cannot canonicalise.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multibase"
)

// Values of the proof members that lmosnode writes and accepts.
const (
	// ProofTypeDataIntegrity is the proof "type".
	ProofTypeDataIntegrity = "DataIntegrityProof"
	// CryptosuiteEdDSAJCS2022 is the proof "cryptosuite".
	CryptosuiteEdDSAJCS2022 = "eddsa-jcs-2022"
	// ProofPurposeAssertionMethod is the proof "proofPurpose".
	ProofPurposeAssertionMethod = "assertionMethod"
)

// Names of the members of a secured document and of its proof.
const (
	docKeyProof                = "proof"
	docKeyContext              = "@context"
	proofKeyType               = "type"
	proofKeyCryptosuite        = "cryptosuite"
	proofKeyVerificationMethod = "verificationMethod"
	proofKeyProofPurpose       = "proofPurpose"
	proofKeyCreated            = "created"
	proofKeyProofValue         = "proofValue"
)

// proofCreatedLayout is how SignDocument writes "created": an XML Schema
// dateTimeStamp in UTC with second precision, e.g. 2026-11-21T10:00:00Z.
const proofCreatedLayout = "2006-01-02T15:04:05Z"

// Errors of VerifyDocument and SignDocument. Every error VerifyDocument
// returns wraps exactly one of ErrNoProof, ErrBadProof and ErrBadDocument, so
// a caller can tell an unsigned document from a forged or damaged one;
// SignDocument wraps ErrBadDocument for a document it cannot sign.
var (
	// ErrNoProof: the document has no "proof" member.
	ErrNoProof = errors.New("document has no proof")
	// ErrBadProof: the document has a proof, but it is malformed, of a kind
	// lmosnode does not accept, or does not verify.
	ErrBadProof = errors.New("bad proof")
	// ErrSignature: the proof is well formed but its signature does not
	// match: the document or the proof was changed after signing, or the
	// verification method names another key. It wraps ErrBadProof.
	ErrSignature = fmt.Errorf("%w: signature does not verify", ErrBadProof)
	// ErrBadDocument: the input is not a JSON object, or not one JCS can
	// canonicalise (I-JSON: no duplicate member names, valid UTF-8, no lone
	// surrogates, numbers within double range).
	ErrBadDocument = errors.New("bad document")
)

// Proof is a Data Integrity proof as it appears in the "proof" member of a
// secured document.
//
// The spec members have their own fields; any other member (id, expires,
// domain, challenge, nonce, previousProof, …) is kept in Extra. Extra members
// are part of the signed proof configuration, so VerifyDocument checks them
// along with the rest, but lmosnode gives them no meaning.
type Proof struct {
	// Context is the proof's "@context" (decoded JSON: a string, []any or
	// map[string]any, or a json.RawMessage), nil when absent.
	Context            any    `json:"@context,omitempty"`
	Type               string `json:"type"`
	Cryptosuite        string `json:"cryptosuite"`
	VerificationMethod string `json:"verificationMethod"`
	ProofPurpose       string `json:"proofPurpose"`
	Created            string `json:"created,omitempty"`
	ProofValue         string `json:"proofValue,omitempty"`
	// Extra holds the members not named above, as raw JSON.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the proof with its members in spec order, Extra members
// (sorted by name) before proofValue, and omits empty optional members.
func (p Proof) MarshalJSON() ([]byte, error) {
	var o orderedObject
	add := func(name string, v any) error {
		raw, err := marshalJSONNoEscape(v)
		if err != nil {
			return fmt.Errorf("proof.%s: %w", name, err)
		}
		o = append(o, orderedMember{name, raw})
		return nil
	}
	if p.Context != nil {
		if err := add(docKeyContext, p.Context); err != nil {
			return nil, err
		}
	}
	for _, m := range []struct{ name, value string }{
		{proofKeyType, p.Type},
		{proofKeyCryptosuite, p.Cryptosuite},
		{proofKeyVerificationMethod, p.VerificationMethod},
		{proofKeyProofPurpose, p.ProofPurpose},
	} {
		if err := add(m.name, m.value); err != nil {
			return nil, err
		}
	}
	if p.Created != "" {
		if err := add(proofKeyCreated, p.Created); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(p.Extra))
	for name := range p.Extra {
		if isProofSpecKey(name) {
			return nil, fmt.Errorf("proof: Extra holds the spec member %q", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		raw := p.Extra[name]
		if !json.Valid(raw) {
			return nil, fmt.Errorf("proof.%s: invalid JSON in Extra", name)
		}
		o = append(o, orderedMember{name, compactJSON(raw)})
	}
	if p.ProofValue != "" {
		if err := add(proofKeyProofValue, p.ProofValue); err != nil {
			return nil, err
		}
	}
	return o.marshal(), nil
}

// UnmarshalJSON reads a proof object. Member names match exactly (unlike
// encoding/json's case-insensitive struct matching, so "Type" is an Extra
// member, not the type); a duplicated member name is an error, and the spec
// members other than @context must be strings.
func (p *Proof) UnmarshalJSON(data []byte) error {
	o, err := parseOrderedObject(data)
	if err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	q, err := proofFromObject(o)
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// proofFromObject reads the members of a proof object (see UnmarshalJSON).
func proofFromObject(o orderedObject) (Proof, error) {
	var q Proof
	for _, m := range o {
		var dst *string
		switch m.name {
		case docKeyContext:
			if err := json.Unmarshal(m.value, &q.Context); err != nil {
				return Proof{}, fmt.Errorf("proof.@context: %w", err)
			}
			continue
		case proofKeyType:
			dst = &q.Type
		case proofKeyCryptosuite:
			dst = &q.Cryptosuite
		case proofKeyVerificationMethod:
			dst = &q.VerificationMethod
		case proofKeyProofPurpose:
			dst = &q.ProofPurpose
		case proofKeyCreated:
			dst = &q.Created
		case proofKeyProofValue:
			dst = &q.ProofValue
		default:
			if q.Extra == nil {
				q.Extra = make(map[string]json.RawMessage)
			}
			q.Extra[m.name] = m.value
			continue
		}
		if k := jsonKindOf(m.value); k != "string" { // json.Unmarshal would take null
			return Proof{}, fmt.Errorf("proof.%s: want a string, got %s", m.name, k)
		}
		if err := json.Unmarshal(m.value, dst); err != nil {
			return Proof{}, fmt.Errorf("proof.%s: %w", m.name, err)
		}
	}
	return q, nil
}

func isProofSpecKey(name string) bool {
	switch name {
	case docKeyContext, proofKeyType, proofKeyCryptosuite, proofKeyVerificationMethod,
		proofKeyProofPurpose, proofKeyCreated, proofKeyProofValue:
		return true
	}
	return false
}

// Signer is who signed a document, as VerifyDocument found it: the did:key
// of the verification method, and the libp2p peer ID of the same key.
type Signer struct {
	// DID is the signer's did:key ("did:key:z6Mk…").
	DID string
	// VerificationMethod is the proof's verificationMethod
	// ("did:key:z6Mk…#z6Mk…").
	VerificationMethod string
	// PublicKey is the Ed25519 key that the signature verified with.
	PublicKey ed25519.PublicKey
	// PeerID is the libp2p peer ID of PublicKey: the same publisher.
	PeerID peer.ID
	// Created is the proof's creation time, zero if the proof has none.
	Created time.Time
	// Proof is the verified proof.
	Proof Proof
}

// SignDocument secures a JSON object document with a Data Integrity proof
// (eddsa-jcs-2022, proofPurpose assertionMethod) made with key, whose
// verification method is the key's did:key. created is written in UTC with
// second precision. Any "proof" the document already has is dropped first.
//
// The result is the document as compact JSON, its members in their original
// order, with "proof" last. Signing is deterministic (Ed25519): the same
// document, key and time give the same bytes.
func SignDocument(doc []byte, key ed25519.PrivateKey, created time.Time) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("sign: private key has %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	return SignDocumentAs(doc, key, DIDKeyVerificationMethod(key.Public().(ed25519.PublicKey)), created)
}

// SignDocumentAs is SignDocument with the proof's verificationMethod given:
// a DID document's own key ("did:wba:example.com:…#key-1") rather than the
// key's did:key. VerifyDocumentKey verifies it.
func SignDocumentAs(doc []byte, key ed25519.PrivateKey, verificationMethod string, created time.Time) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("sign: private key has %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	pub := key.Public().(ed25519.PublicKey)
	if !pub.Equal(ed25519.NewKeyFromSeed(key.Seed()).Public()) {
		return nil, errors.New("sign: private key is inconsistent (its public half does not belong to its seed)")
	}
	created = created.UTC().Truncate(time.Second)
	if created.Year() < 1 || created.Year() > 9999 || created.IsZero() {
		return nil, fmt.Errorf("sign: created time %v is out of range (years 0001–9999, not zero)", created)
	}

	unsecured, err := parseDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	unsecured = unsecured.without(docKeyProof)
	canonicalDoc, err := Canonicalize(unsecured.marshal())
	if err != nil {
		return nil, fmt.Errorf("sign: %w: %w", ErrBadDocument, err)
	}

	proof := Proof{
		Type:               ProofTypeDataIntegrity,
		Cryptosuite:        CryptosuiteEdDSAJCS2022,
		VerificationMethod: verificationMethod,
		ProofPurpose:       ProofPurposeAssertionMethod,
		Created:            created.Format(proofCreatedLayout),
	}
	if ctx, ok := unsecured.get(docKeyContext); ok {
		proof.Context = ctx // json.RawMessage
	}
	config, err := proof.MarshalJSON() // no proofValue yet
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	canonicalConfig, err := Canonicalize(config)
	if err != nil {
		return nil, fmt.Errorf("sign: proof configuration: %w", err)
	}
	hash := proofHashData(canonicalConfig, canonicalDoc)
	proof.ProofValue, err = multibase.Encode(multibase.Base58BTC, ed25519.Sign(key, hash))
	if err != nil {
		return nil, fmt.Errorf("sign: proofValue: %w", err)
	}
	rawProof, err := proof.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return append(unsecured, orderedMember{docKeyProof, rawProof}).marshal(), nil
}

// VerifyDocument verifies the Data Integrity proof (eddsa-jcs-2022) of a
// secured JSON document and returns who signed it. The key is taken from the
// proof's did:key verification method, so any Ed25519 did:key signer can be
// verified; whether that signer may publish the document is the caller's
// decision.
//
// The error wraps ErrNoProof when the document has no proof, ErrBadDocument
// when it is not a JSON object JCS can canonicalise, and ErrBadProof (and
// ErrSignature, for a signature that does not match) otherwise; its text
// names the member at fault.
func VerifyDocument(doc []byte) (Signer, error) {
	return VerifyDocumentKey(doc, nil)
}

// VerifyDocumentKey is VerifyDocument for a proof whose verification method
// is not a did:key (a did:web or did:wba document's own key, say): keyOf
// returns the Ed25519 key a verification method URL names, or an error when
// the caller does not accept it. A nil keyOf accepts did:key methods only,
// as VerifyDocument does. The proof's type, cryptosuite and purpose are
// checked the same way.
func VerifyDocumentKey(doc []byte, keyOf func(verificationMethod string) (ed25519.PublicKey, error)) (Signer, error) {
	unsecured, proofObj, err := splitProof(doc)
	if err != nil {
		return Signer{}, err
	}
	proof, err := proofFromObject(proofObj)
	if err != nil {
		return Signer{}, fmt.Errorf("verify: %w: %w", ErrBadProof, err)
	}
	pub, err := acceptedKey(proof, keyOf)
	if err != nil {
		return Signer{}, err
	}
	created, sig, err := proofTimeAndValue(proof, proofObj)
	if err != nil {
		return Signer{}, err
	}
	config, err := proofConfig(proofObj, unsecured)
	if err != nil {
		return Signer{}, err
	}
	// 5.–7. transformedData, proofConfig, hashData.
	canonicalDoc, err := Canonicalize(unsecured.marshal())
	if err != nil {
		return Signer{}, fmt.Errorf("verify: %w: %w", ErrBadDocument, err)
	}
	canonicalConfig, err := Canonicalize(config.marshal())
	if err != nil {
		return Signer{}, badProof("proof configuration: %w", err)
	}
	hash := proofHashData(canonicalConfig, canonicalDoc)
	// 8. Proof Verification: Ed25519 over hashData.
	if !ed25519.Verify(pub, hash, sig) {
		return Signer{}, fmt.Errorf("verify: %w (key %s)", ErrSignature, proof.VerificationMethod)
	}
	id, err := PeerIDFromEd25519(pub)
	if err != nil {
		return Signer{}, badProof("proof.verificationMethod: %w", err)
	}
	did, _, _ := strings.Cut(proof.VerificationMethod, "#")
	return Signer{
		DID:                did,
		VerificationMethod: proof.VerificationMethod,
		PublicKey:          pub,
		PeerID:             id,
		Created:            created,
		Proof:              proof,
	}, nil
}

// badProof is VerifyDocument's error for a proof that is malformed or not
// accepted: it wraps ErrBadProof.
func badProof(format string, args ...any) error {
	return fmt.Errorf("verify: %w: "+format, append([]any{ErrBadProof}, args...)...)
}

// splitProof parses a secured document into (1.) the unsecuredDocument,
// the document without its proof, and (2.) the proofOptions, the one proof
// object with every member as it was written.
func splitProof(doc []byte) (unsecured, proofObj orderedObject, err error) {
	secured, err := parseDocument(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w", err)
	}
	rawProof, ok := secured.get(docKeyProof)
	if !ok {
		return nil, nil, fmt.Errorf("verify: %w", ErrNoProof)
	}
	switch k := jsonKindOf(rawProof); k {
	case "object":
	case "array":
		return nil, nil, fmt.Errorf("verify: %w: proof is an array (a proof set); want exactly one proof object", ErrBadProof)
	default:
		return nil, nil, fmt.Errorf("verify: %w: proof is %s, want an object", ErrBadProof, k)
	}
	proofObj, err = parseOrderedObject(rawProof)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w: proof: %w", ErrBadProof, err)
	}
	return secured.without(docKeyProof), proofObj, nil
}

// acceptedKey checks that proof is of the kind lmosnode accepts (a
// DataIntegrityProof with eddsa-jcs-2022 for assertionMethod, by a did:key
// verification method URL, or one keyOf accepts) and returns the
// verification method's key.
func acceptedKey(proof Proof, keyOf func(string) (ed25519.PublicKey, error)) (ed25519.PublicKey, error) {
	if proof.Type != ProofTypeDataIntegrity {
		return nil, badProof("proof.type %q is not supported, want %q", proof.Type, ProofTypeDataIntegrity)
	}
	if proof.Cryptosuite != CryptosuiteEdDSAJCS2022 {
		return nil, badProof("proof.cryptosuite %q is not supported, want %q", proof.Cryptosuite, CryptosuiteEdDSAJCS2022)
	}
	if proof.ProofPurpose != ProofPurposeAssertionMethod {
		return nil, badProof("proof.proofPurpose %q is not accepted, want %q", proof.ProofPurpose, ProofPurposeAssertionMethod)
	}
	if !strings.Contains(proof.VerificationMethod, "#") {
		return nil, badProof("proof.verificationMethod %q is not a verification method URL (did:key:z6Mk…#z6Mk…)", proof.VerificationMethod)
	}
	if keyOf == nil {
		keyOf = ParseDIDKey
	}
	pub, err := keyOf(proof.VerificationMethod)
	if err != nil {
		return nil, badProof("proof.verificationMethod: %w", err)
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, badProof("proof.verificationMethod %q: not an Ed25519 key", proof.VerificationMethod)
	}
	return pub, nil
}

// proofTimeAndValue decodes the proof's created time (zero if proofObj has
// none) and (3.) its proofBytes, the multibase base58btc proofValue.
func proofTimeAndValue(proof Proof, proofObj orderedObject) (created time.Time, sig []byte, err error) {
	if _, ok := proofObj.get(proofKeyCreated); ok {
		if created, err = parseXSDDateTimeStamp(proof.Created); err != nil {
			return time.Time{}, nil, badProof("proof.created: %w", err)
		}
	}
	if _, ok := proofObj.get(proofKeyProofValue); !ok {
		return time.Time{}, nil, badProof("proof.proofValue is missing")
	}
	if sig, err = decodeProofValue(proof.ProofValue); err != nil {
		return time.Time{}, nil, badProof("proof.proofValue: %w", err)
	}
	return created, sig, nil
}

// proofConfig is the proof configuration to hash: the proof options
// without proofValue, with the document's @context. (4.) A proof @context
// must equal the document's (see the file comment).
func proofConfig(proofObj, unsecured orderedObject) (orderedObject, error) {
	docCtx, docHasCtx := unsecured.get(docKeyContext)
	if proofCtx, ok := proofObj.get(docKeyContext); ok {
		if !docHasCtx {
			return nil, badProof("proof.@context is set but the document has no @context")
		}
		same, err := sameCanonicalJSON(proofCtx, docCtx)
		if err != nil {
			return nil, badProof("proof.@context: %w", err)
		}
		if !same {
			return nil, badProof("proof.@context differs from the document's @context")
		}
	}
	config := proofObj.without(proofKeyProofValue)
	if docHasCtx {
		config = config.with(docKeyContext, docCtx)
	}
	return config, nil
}

// proofHashData is the "Hashing (eddsa-jcs-2022)" step: SHA-256 of the canonical
// proof configuration followed by SHA-256 of the canonical (transformed)
// unsecured document.
func proofHashData(canonicalConfig, canonicalDoc []byte) []byte {
	configHash := sha256.Sum256(canonicalConfig)
	docHash := sha256.Sum256(canonicalDoc)
	return append(configHash[:], docHash[:]...)
}

// decodeProofValue decodes a multibase base58btc Ed25519 signature.
func decodeProofValue(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	if s[0] != 'z' {
		return nil, fmt.Errorf("want multibase base58btc (prefix 'z'), got prefix %q", s[:1])
	}
	_, sig, err := multibase.Decode(s)
	if err != nil {
		return nil, fmt.Errorf("not base58btc: %w", err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("holds %d bytes, want an Ed25519 signature of %d", len(sig), ed25519.SignatureSize)
	}
	return sig, nil
}

// xsdDateTimeStamp is the lexical form of an XML Schema 1.1 dateTimeStamp with a
// four-digit year: a date and time with a mandatory time zone.
var xsdDateTimeStamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

// parseXSDDateTimeStamp parses a proof's "created" (Data Integrity: an XML
// Schema dateTimeStamp, in UTC or with a time zone offset).
func parseXSDDateTimeStamp(s string) (time.Time, error) {
	if !xsdDateTimeStamp.MatchString(s) {
		return time.Time{}, fmt.Errorf("%q is not an XML Schema dateTimeStamp (e.g. 2026-11-21T10:00:00Z)", s)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a valid date and time", s)
	}
	return t.UTC(), nil
}

// sameCanonicalJSON reports whether two JSON values are equal after JCS.
func sameCanonicalJSON(a, b json.RawMessage) (bool, error) {
	ca, err := Canonicalize(a)
	if err != nil {
		return false, err
	}
	cb, err := Canonicalize(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ca, cb), nil
}

// orderedMember is one member of a JSON object, its value as compact raw JSON.
type orderedMember struct {
	name  string
	value json.RawMessage
}

// orderedObject is a JSON object as its members in document order.
type orderedObject []orderedMember

// parseDocument reads a document to sign or verify: a JSON object that JCS
// accepts as a whole (so that no member, however nested, is ambiguous or
// unrepresentable) with unique member names.
func parseDocument(doc []byte) (orderedObject, error) {
	if _, err := Canonicalize(doc); err != nil {
		if k := jsonKindOf(doc); k != "object" {
			return nil, fmt.Errorf("%w: %s, want a JSON object", ErrBadDocument, k)
		}
		return nil, fmt.Errorf("%w: not canonicalisable JSON (RFC 8785): %w", ErrBadDocument, err)
	}
	o, err := parseOrderedObject(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDocument, err)
	}
	return o, nil
}

// parseOrderedObject splits a JSON object into its members, rejecting anything else
// and duplicate member names.
func parseOrderedObject(data []byte) (orderedObject, error) {
	if k := jsonKindOf(data); k != "object" {
		return nil, fmt.Errorf("%s, want a JSON object", k)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	var o orderedObject
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("invalid JSON: member name %v is not a string", tok)
		}
		if seen[name] {
			return nil, fmt.Errorf("duplicate member %q", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("invalid JSON in member %q: %w", name, err)
		}
		o = append(o, orderedMember{name, compactJSON(raw)})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the object")
	}
	return o, nil
}

func (o orderedObject) get(name string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.name == name {
			return m.value, true
		}
	}
	return nil, false
}

// without returns a copy of o without the member name.
func (o orderedObject) without(name string) orderedObject {
	out := make(orderedObject, 0, len(o))
	for _, m := range o {
		if m.name != name {
			out = append(out, m)
		}
	}
	return out
}

// with returns a copy of o with the member name set to value, in place if
// it exists, appended if not.
func (o orderedObject) with(name string, value json.RawMessage) orderedObject {
	out := make(orderedObject, 0, len(o)+1)
	found := false
	for _, m := range o {
		if m.name == name {
			m.value, found = value, true
		}
		out = append(out, m)
	}
	if !found {
		out = append(out, orderedMember{name, value})
	}
	return out
}

// marshal writes o as compact JSON in member order.
func (o orderedObject) marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := marshalJSONNoEscape(m.name) // a string always marshals
		b.Write(name)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// marshalJSONNoEscape is json.Marshal without HTML escaping and without the
// trailing newline of json.Encoder.
func marshalJSONNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// compact returns raw JSON without insignificant white space (raw must be
// valid JSON; it is returned unchanged if not).
func compactJSON(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// jsonKindOf names the kind of JSON value raw starts with, for error messages.
func jsonKindOf(raw []byte) string {
	s := bytes.TrimLeft(raw, " \t\r\n")
	if len(s) == 0 {
		return "empty input"
	}
	switch c := s[0]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || ('0' <= c && c <= '9'):
		return "number"
	default:
		return "not JSON"
	}
}
