// Package anp speaks the Agent Network Protocol (ANP) both ways.
//
// Serving: the node's did:wba DID document (ANP-03) at the path the
// method defines, ANP agent descriptions (ANP-07) for every lmos:Agent and
// lmos:Tool the caller may see, and the discovery collection at
// /.well-known/agent-descriptions (ANP-08), rendered once per directory
// revision (httpapi.DocCache).
//
// Authenticating: requests signed per ANP-02 — HTTP message signatures
// (RFC 9421, httpsig.go) with Ed25519 over at least @method, @target-uri
// and, with a body, content-digest (RFC 9530), keyid a DID URL whose
// document (did:wba or did:web, resolved by node/did) authorizes the key
// for authentication — are an alternative to the API's bearer token on
// the routes that call Things. A verified request gets an access token
// (Authentication-Info, a JWT the node signs) for its next requests; a
// refused one 401 with the DIDWba challenge (WWW-Authenticate,
// Accept-Signature). The caller's DID and its key's peer ID go into the
// request's context (interact.WithDIDCaller), where the owner's access
// decision (own) reads them.
//
// Consuming: an ANP agent description read from a URL becomes an
// lmos:Agent the node publishes; its calls go out over the description's
// JSON-RPC interface, signed with the node's did:wba (Signer).
package anp
