// Package tdd serves a node's directory over HTTP: the W3C WoT Discovery
// Thing Description Directory (TDD) API, with the LMOS filters, and the
// node-admin endpoints the lmosnode CLI uses (through node/apiclient, the
// one client of the node's API).
//
// # Endpoints
//
// The directory API (W3C WoT Discovery §7.3.2, "Directory Service API"):
//
//	GET  /.well-known/wot          the directory's own TD (@type ThingDirectory)
//	GET  /things                   listing: JSON array of TDs (application/ld+json)
//	                               or format=collection (a ThingCollection); in id
//	                               (code point) order, or sort_by=id|title|created|
//	                               modified and sort_order=asc|desc; limit/offset,
//	                               Link rel="next" and rel="canonical" with an etag
//	                               (the directory's revision); LMOS filters type, capability
//	                               (id[@semver-range]), vendor, publisher, group,
//	                               q (free text, ranked when no sort_by), online;
//	                               online Things first, LMOS-Online per TD; pages
//	                               of at most Config.MaxLimit TDs and MaxPageBytes
//	GET  /things?view=consumer     the same listing of consumer views (Deps.ConsumerView)
//	GET  /things/{id}              one TD (application/td+json); HEAD likewise;
//	                               enriched=true: the Enriched TD
//	GET  /search/jsonpath?query=Q  RFC 9535 JSONPath over the array of TDs, the
//	                               selected nodes as a JSON array; bounded by
//	                               Config.MaxQueryLength, MaxQueryDepth and a
//	                               SearchTimeout watchdog (503)
//	HEAD on every GET path         the GET's status and headers, no body (an
//	                               event stream's HEAD ends at once)
//	PUT  /things/{id}              create (201) or update (204) an own Thing
//	POST /things                   create an anonymous Thing (201, Location)
//	PATCH /things/{id}             JSON merge patch (RFC 7396) of an own Thing (204)
//	DELETE /things/{id}            remove an own Thing: signed tombstone (204)
//	GET  /events[/{type}]          SSE: thing_created, thing_updated, thing_deleted
//
// The node-admin API:
//
//	POST   /api/v1/things          {"td": {...}, "backend": URL}: publish an own Thing
//	GET    /api/v1/things          the node's own Things with registration and backend
//	DELETE /api/v1/things/{id}     remove an own Thing
//	GET    /api/v1/peers           the peers the node knows
//	POST   /api/v1/connect         {"addr": MULTIADDR}: connect to a peer
//
// Errors are RFC 9457 (RFC 7807) problem details (application/problem+json,
// UTF-8, Content-Language: en),
// the node's one problem type proto.Problem written by package httpapi;
// node/apiclient returns it as the error. An invalid TD gives 400 with
// "validationErrors": [{"field": JSON pointer, "description": …}], as the
// WoT Discovery spec asks. Request bodies are
// bounded (proto.MaxTDSize: 413 beyond) and must carry a JSON media type
// (415 otherwise; this also keeps cross-origin browser POSTs out, which a
// browser sends unasked only as forms, text/plain or untyped). A failing
// Publisher maps to 409 (stale), 503 (directory closed), 504 (timeout) or
// 500. docs/api.md is the user-facing description of all of this.
//
// # Identity: (publisher, id)
//
// A Thing is keyed by its publisher and its id; two publishers may use the
// same id and are never merged. GET /things/{id} resolves an id this way:
// ?publisher=PEER (a peer ID or did:key) selects that publisher's Thing;
// otherwise the node's own Thing wins; otherwise, if exactly one publisher
// has the id, its Thing is served; if several have, the answer is 300
// Multiple Choices, a problem body whose "candidates" member lists each
// publisher with the URL that selects it. A learned Thing never shadows an
// own one.
//
// Writes (PUT, POST, PATCH, DELETE) always address the node's own Things and
// go through the Publisher, which signs them with the node's key, bumps
// lmos:seq, stores them in the directory and announces them to the
// federation. Any valid TD 1.1 is accepted, a plain one without LMOS terms
// too: proto.SignThing binds the "lmos" prefix in @context for the
// lmos:seq it adds (proto.TD.BindLMOS), so the signed record is valid and
// served byte for byte as signed. A PATCH applies to the stored TD without
// its proof and lmos:seq. A "registration" member a client writes (an
// Enriched TD written back) is checked and left out of the record; expires
// and ttl are refused with 501, since own Things do not expire. Other publishers' Things are read-only: a write naming one
// (?publisher=OTHER), or a PATCH or DELETE of an id only others publish, is
// 403 Forbidden. A PUT of an id that only others publish creates the node's
// own Thing of that id, which is legitimate: the two stay apart.
//
// # Consumer views
//
// The signed TDs' forms point at their publishers' backends, relative and
// without base: a WoT consumer cannot use them. With Deps.ConsumerView
// (the node wires the HTTP binding's consumer view, package gateway) the
// listing takes view=consumer and lists each Thing's consumer view instead
// (unsigned, absolute forms pointing at this node), with the same
// filters, visibility, order and pages. The directory TD's things
// property, which WoT consumers exploring the directory read (node-wot's
// exploreDirectory), points at that listing; GET /things without view,
// GET /things/{id} and retrieveThing stay the signed TDs, the spec's
// directory semantics, and GET /things/{id} links to the consumer view
// (Link: </things/{id}/td>; rel="alternate").
//
// # Signed documents and registration information
//
// TDs are served exactly as their publisher signed them (W3C Data Integrity,
// eddsa-jcs-2022), so any third party can verify them. The spec's Enriched
// TD adds a "registration" member and the discovery @context, which the
// proof does not cover: it is served only on request (enriched=true on
// /things and /things/{id}), as a view that keeps the now non-verifying
// proof; the default form stays the signed record byte for byte. Both forms
// carry the registration information in response headers as well:
//
//	LMOS-Registration: created="2026-11-21T10:00:00Z", modified="…", expires="…", ttl=172800
//	LMOS-Publisher: 12D3KooW…
//	LMOS-Organization: verified (with Deps.Orgs: the TD's lmos:organization
//	checked, docs/identity.md; LMOS-Organization-Reason when not verified)
//	Last-Modified, Expires (HTTP dates)
//
// LMOS-Registration is an RFC 8941 dictionary; expires and ttl (seconds) are
// absent for own Things, which do not expire. The admin listing
// (GET /api/v1/things) carries the same information as a "registration"
// member next to each TD.
//
// # Events
//
// GET /events streams the directory's changes as server-sent events: the
// event field is the type, the id field the directory's event ID, the data
// {"id": thing id, "publisher": peer ID}; with ?diff=true thing_created
// carries the complete signed TD and thing_updated the RFC 7396 merge patch
// from the replaced record (directory.Event.Previous) to the new one, with
// "id" (the whole TD if the replaced record could not be read). A
// Last-Event-ID header resumes after that event;
// an ID whose successors are no longer held gives 410 Gone (re-read the
// directory, then subscribe afresh). A stream that falls too far behind is
// ended, and the client resumes with Last-Event-ID. The stream is
// httpapi's: "retry: 2000" comes with the first event, keep-alive comment
// lines every
// Config.Heartbeat keep idle streams alive, and a client that reads
// nothing for two heartbeats is dropped. Handler.Close ends every stream.
//
// # Visibility
//
// Deps.Visibility, if set, returns per request the predicate that decides
// which Things the caller may see (the group layer: lmos:groups). Every
// read path (listing, retrieval, search, events, the federation fallback) applies
// it; an invisible Thing is answered as absent.
//
// # Concurrency
//
// A Handler is safe for concurrent use. Writes are serialised, so a PATCH's
// read-modify-write cannot lose a concurrent update. It owns no goroutine:
// event streams run on the HTTP server's request goroutines and end when
// the client leaves or Close is called.
package tdd
