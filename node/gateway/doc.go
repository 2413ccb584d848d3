// Package gateway is the WoT HTTP binding of a node: it lets an ordinary
// HTTP or WoT consumer (node-wot, curl) read, write and observe the
// properties, invoke the actions and subscribe to the events of any Thing
// the node knows, its own or another node's, by talking to this node only.
// It adapts an interact.Session to HTTP and nothing more: the Thing's own
// node checks every request against the TD and runs it.
//
// # Routes
//
//	GET    /things/{id}/td                           the consumer view of the TD (forms point here)
//	GET    /things/{id}/properties/{name}            readproperty    → 200, body: the value (JSON or CBOR)
//	PUT    /things/{id}/properties/{name}            writeproperty   → 204
//	GET    /things/{id}/properties/{name}/observe    observeproperty → 200 text/event-stream
//	POST   /things/{id}/actions/{name}               invokeaction    → 200 output | 204 | 201 + Location
//	                                                 (application/x-ndjson body: streaming session → 200 text/event-stream)
//	GET    /things/{id}/actions/{name}/{invocation}  queryaction     → 200 {"status", "output", "error"}
//	DELETE /things/{id}/actions/{name}/{invocation}  cancelaction    → 200 {"status", …}
//	GET    /things/{id}/events/{name}                subscribeevent  → 200 text/event-stream
//
// ?publisher=PEER (a peer ID or did:key) selects the publisher of the id,
// as in the directory API; without it the node's own Thing wins, else the
// single publisher of the id, else 300 Multiple Choices. A Thing that
// Deps.Visible hides (restricted to groups this node may not see) does not
// count: its TD is 404 as for an unknown Thing, a call of it 403 Forbidden.
//
// # Actions
//
// POST waits for the Thing's first answer (at most Config.SyncWait). A
// final actionStatus answers the request: completed → 200 with the output
// (204 without one); failed → the problem. A pending or running status, or
// no answer within SyncWait, makes the invocation long-running: 201 Created
// with Location naming it and the status as body. GET on the Location
// returns {"status": "pending"|"running"|"completed"|"failed"|"cancelled",
// "output": …, "error": problem}; DELETE cancels it. Finished invocations
// stay queryable for Config.Retention. The status shape is the one the
// interact HTTP backend polls, so a node's binding can itself be another
// node's --backend.
//
// # Streaming sessions
//
// POST with the RFC 7240 preference "Prefer: respond-async" is one-way:
// the invocation is handed on with oneWay set and answered 202 at once.
//
// POST on an action with Content-Type application/x-ndjson opens a
// streaming session (request-stream/response-stream), in the shape of the
// interact HTTP backend contract: the body is one JSON value per line, the
// input and then every input chunk (streamInput); the end of the body is
// streamEnd. The answer, sent as soon as the Thing accepts, is an event
// stream read while the body is still being written (full duplex): events
// without a type carry one output chunk each; event "completed" (data: the
// final output, if any) or "failed" (data: an RFC 7807 object) ends it. An
// action without a stream handler answers as an ordinary invocation in the
// same shape.
//
// # Events and observations
//
// Server-sent events without an event type (so that EventSource.onmessage
// and node-wot see them): each data line is the event's data or the
// property's new value (JSON), the id the LMOS messageID. A failure ends
// the stream with an event of type "error" whose data is an RFC 7807
// object. Closing the connection unsubscribes. The streams, those of
// sessions too, are package httpapi's: keep-alive comment lines every
// Config.KeepAlive keep idle streams alive; a consumer that reads nothing
// for Config.WriteTimeout is disconnected.
//
// # Content negotiation
//
// Property values (GET, PUT), action input and output (POST) and action
// status bodies (201, GET and DELETE on an invocation) are JSON or CBOR
// (RFC 8949). Accept picks the answer's format (httpapi.Negotiate):
// application/cbor (or a +cbor type) with a higher quality than every JSON
// type answers in CBOR;
// no Accept, a tie or a wildcard answers in JSON. A CBOR value is the
// data item of the JSON value as the LMOS CBOR codec writes payloads
// (proto.Value.MarshalCBOR: integers beyond 64 bits as bignums, floats as
// floats, deterministic encoding); a CBOR status body is the map of the
// JSON status object's members. A request body with Content-Type
// application/cbor (or +cbor) is decoded from CBOR (proto.Value.UnmarshalCBOR:
// what JSON cannot carry, such as byte strings, undefined, NaN or non-text
// map keys, is 400); without a Content-Type, or with application/json or
// a +json type, it is JSON; any other Content-Type is 415. (On the node's
// API a body without Content-Type never gets here: httpapi.BrowserConsent
// refuses it, as a web page can send it without a preflight.) An Accept that
// admits neither JSON nor CBOR is 406 (the TD view, GET …/td, is JSON
// only). Event streams (SSE) and streaming sessions (NDJSON) stay text,
// and errors are always application/problem+json.
//
// # Errors
//
// Every error is an RFC 9457 problem (application/problem+json, a
// proto.Problem written by httpapi.WriteProblem) with the status of the
// LMOS error message: 300 with candidates (an id several publishers
// have), 400 invalid input (the detail names the JSON pointer), 403
// Forbidden (a Thing restricted to groups, refused by its owner or by this
// node), 404 unknown Thing or affordance, 405 operation not allowed, 502
// backend or owner node unreachable, 504 timeout, and so on (see package
// interact).
//
// # The consumer view of a TD
//
// A TD is signed by its publisher; rewriting its forms would break its
// proof. GET /things/{id}/td therefore serves an unsigned consumer view
// (ConsumerView): the signed TD without "proof" and "base"; "@context" led
// by the TD 1.0 and the TD 1.1 URIs (which both TD generations, and
// node-wot 0.9.2's validator, accept), then the published context's other
// entries; every affordance's forms replaced by absolute forms for each
// transport this node offers: its HTTP routes first (op, htv:methodName,
// subprotocol "sse" for observation and events), then, with
// Config.WebSocketPath, the LMOS WebSocket binding (href ws(s)://<api>/ws,
// subprotocol "lmosprotocol", the operations the binding serves; the
// Thing itself gets one for writemultipleproperties and
// subscribeallevents), then, when Deps.Broker says the node's MQTT
// gateway exposes the Thing, MQTT forms in the W3C MQTT binding
// template's terms (mqv:controlPacket, mqv:topic, mqv:filter); and the
// security scheme of this node's API: nosec on loopback without a token,
// bearer when the API requires one (Config.BearerAuth). The signed
// original stays at GET /things/{id}. ConsumerViewOf serves the same view
// to the directory's listing for consumers (GET /things?view=consumer,
// package tdd), pinned to the entry's publisher.
//
// # Concurrency
//
// A Handler is safe for concurrent use. It owns one goroutine per
// long-running invocation (it follows the invocation's status); Close
// ends them and every event stream.
package gateway
