// Package did resolves the web-anchored DID methods lmosnode reads:
// did:web (W3C CCG did:web Method Specification) and did:wba (ANP's
// did:wba method, which resolves like did:web). It depends on nothing of
// the node but the message model (proto: Ed25519 did:key and the
// eddsa-jcs-2022 proof of an e1_ path DID's document).
//
// # From DID to URL
//
// Parse reads a DID: the method-specific identifier is a host name (never
// an IP address, both methods forbid it), an optional port with its colon
// percent-encoded ("example.com%3A8443"), and optional path segments
// separated by colons. ID.URL is where its document lives:
//
//	did:web:example.com                  https://example.com/.well-known/did.json
//	did:web:example.com%3A8443           https://example.com:8443/.well-known/did.json
//	did:wba:example.com:user:alice:e1_…  https://example.com/user/alice/e1_…/did.json
//
// # Fetching
//
// A Resolver fetches over HTTPS only, with a timeout for the whole request
// (Options.Timeout, default 10 s), a limit on the body (Options.MaxBytes,
// default 256 KiB) and redirects followed only within the same host and
// port over HTTPS (at most 3). The document's id must be the DID asked for.
// Options.DialContext and Options.RootCAs (or a whole Options.Client) let
// a test map a made-up domain to 127.0.0.1 and trust a test CA, so no test
// needs real DNS; package didtest does exactly that.
//
// # Cache
//
// A resolved document is cached for the max-age its response's
// Cache-Control gives, bounded to [MinTTL, MaxTTL] (defaults 1 min and
// 1 h); without max-age (or with no-cache/no-store) it is kept DefaultTTL
// (5 min), and with no-cache/no-store for MinTTL. A failure is cached for
// ErrorTTL (default 30 s) so a failing domain is not asked again at every
// lookup. Concurrent lookups of one DID share one fetch. At most MaxEntries
// (default 1024) DIDs are cached; the one expiring first is dropped.
// Cached returns what the cache holds without fetching, for hot paths that
// must not wait on the network.
//
// # Documents
//
// Document is the part of a DID document lmosnode uses: the verification
// methods (publicKeyMultibase, as Multikey or Ed25519VerificationKey2020,
// and publicKeyJwk with kty OKP, crv Ed25519; other keys are kept but have
// no Ed25519 key), and the authentication and assertionMethod relationships
// (references, relative "#key-1" ones expanded against the DID, or embedded
// methods). HasAssertionKey and HasAuthenticationKey tell whether a key is
// authorised for a relationship.
//
// For a did:wba path DID whose last segment is "e1_<fingerprint>", the
// document must carry a proof (DataIntegrityProof, eddsa-jcs-2022) by one
// of its own Ed25519 methods whose RFC 7638 JWK thumbprint is the
// fingerprint (ANP did:wba §2.5.2); otherwise resolution fails.
//
// # Organisations
//
// A publisher claims an organisation with lmos:organization in its signed
// TDs (docs/identity.md). Resolver.Organization checks a claim against the
// organisation's document without waiting: the publisher's key must be in
// assertionMethod; an unresolved claim is fetched in the background and
// reported unverified with ReasonPending meanwhile. Members remembers each
// publisher's latest claim (for the trust list's organisation entries:
// Verified) and implements Lookup, which the node's surfaces ask.
// NewDocument writes the document an organisation hosts.
package did
