// Package interact is the interaction engine of a node: it carries every
// LMOS interaction pattern between a consumer and a Thing, whichever node
// each of them is on, with one message model (proto.Message) and thin
// transports around it.
//
// # One dispatch model
//
// A consumer opens an interaction with Invoker.Invoke(ctx, request) and
// gets a Session: the Thing's replies in order on a channel, closed after
// the terminal message (see proto.Message.Ends), and Send for the
// consumer's further messages (streamInput, streamEnd, cancelAction,
// queryAction, unsubscribe…). Which message ends, continues or opens an
// interaction is the message model's rule (proto/rules.go), not this
// package's. The Engine is the Invoker of the node's own Things; the
// Client is the Invoker of Things owned by another node, reached over a
// libp2p stream served by that node's Server, which feeds its Engine. A
// gateway (HTTP, WebSocket, MQTT) adapts a Session to its protocol and
// nothing more.
//
// The Router is the one rule of which of them to call: For(publisher) is
// the Engine when this node publishes the Thing and the Client's Invoker
// of the publisher otherwise; Router.Invoke first asks Owners which node
// that is. Gateways and bridges that resolve the publisher themselves
// call For, the others Invoke; none decides local or remote on its own.
//
// Each part is built the same way: NewEngine(EngineDeps, EngineConfig,
// ...Option), NewServer(ServerDeps, TransportConfig, ...Option),
// NewClient(ClientDeps, TransportConfig, ...Option) and
// NewHTTPBackend(HTTPBackendConfig, ...Option). Deps are the components
// it works with, Config its serialisable settings (every zero field
// selects a documented default), Options what cannot be serialised:
// WithLogger, WithClock, WithCodec, WithHTTPClient.
//
// # Engine
//
// The Engine checks a request against the Thing's TD (Things) before the
// Thing's Backend sees it: the Thing and the affordance exist, the
// operation is allowed (readOnly, writeOnly, observable), and action input,
// written property values and streamed input chunks match the TD's data
// schemas (JSON Schema draft 7, compiled once per distinct schema). It
// keeps invocations for queryAction and cancelAction (by correlationID,
// only for the caller that started them, retained a while after they end),
// shares one backend call per event or observed property between all its
// subscribers, and turns failures into error messages:
//
//	400 Bad request           the envelope breaks the spec
//	400 Invalid input         input/data does not match the schema; detail names the JSON pointer
//	403 Forbidden             the Thing names lmos:groups and EngineDeps.Authorize refused the caller (see AuthorizeFunc)
//	404 Thing not found       unknown thingID
//	404 Affordance not found  unknown property, action or event
//	404 Action not found      query/cancel/stream of an unknown correlationID
//	405 Operation not allowed write of a readOnly property, read of a writeOnly one, observe of a non-observable one
//	409 Conflict              a running invocation or open subscription has this correlationID
//	429 Too many requests     (the libp2p Server) the calling node has TransportConfig.MaxPeerInteractions in flight
//	499 Cancelled             the interaction was abandoned
//	500 Internal error        the backend failed or panicked
//	501 Not implemented       the backend has no handler for the operation
//	502 Bad gateway           the backend (or the owner node) is unreachable or broke off
//	503 Service unavailable   no backend, node shutting down, slow subscriber dropped
//	504 Timeout               no final answer within RequestTimeout or ActionTimeout
//
// A cancelled invocation ends with actionStatus "cancelled", not an error.
//
// # libp2p wire format
//
// Protocol proto.ProtocolInteract, "/lmos/interact/1.0.0". The consumer's
// node opens one stream per interaction (one request and its replies, one
// subscription or observation, one streaming session) and the owner serves
// it:
//
//   - Framing: every message is one frame, an unsigned varint length
//     (LEB128, minimal, at most 9 bytes) followed by that many bytes of one
//     encoded message (proto.FrameCodec). A frame above
//     proto.MaxMessageSize (4 MiB) is refused and the stream reset.
//   - Codec: JSON or CBOR, chosen by the consumer and recognised by the
//     owner from the first byte of the first frame (proto.SniffCodec: '{'
//     is JSON, a CBOR map head 0xa0–0xbf is CBOR). Every later frame of the
//     stream, both ways, uses the same codec. No negotiation round trip, no
//     second protocol ID.
//   - Consumer → owner: the request first; then, while the interaction
//     runs, streamInput, streamEnd, cancelAction and queryAction of an
//     invocation, or the unsubscribe/unobserve that ends a subscription.
//     The consumer keeps its side open until the interaction ends: its
//     stream closed (EOF) or reset before the terminal message is the
//     consumer leaving (see Ending early).
//   - Owner → consumer: the replies in order, ending with the terminal
//     message (see Ends); then the owner closes its write side. A
//     subscription ended by the consumer ends with the owner's close and
//     no message. A one-way request gets no frame back; the consumer closes
//     the stream right after writing it.
//   - Ending early: the consumer cancels an invocation with cancelAction
//     and (Session.Close, ctx cancelled) resets the stream; the owner
//     treats EOF, a reset or a read error as the consumer gone and cancels
//     the interaction at once: the backend call's context ends (an HTTP
//     backend's request is cancelled, a long-running action DELETEd), a
//     subscription or observation ends. Work the consumer started ends
//     when its stream does; only a one-way action outlives it. A stream that ends (EOF or reset) before the terminal
//     message of an interaction that has one is reported to the consumer
//     as a 502 error message.
//   - Deadlines: the owner waits FirstFrameTimeout (10 s) for the request
//     and WriteTimeout (30 s) for each frame it writes; the consumer bounds
//     opening the stream and writing the request by DialTimeout (15 s).
//     Long interactions have no read deadline: ActionTimeout bounds them
//     at the owner, and libp2p keep-alives notice dead connections.
//   - Identity: the owner's Engine sees the remote peer ID as the caller
//     (WithCaller): only that peer can query, cancel, stream into or
//     unsubscribe what it opened.
//     The Server also marks the context with the authenticated remote
//     peer (WithRemotePeer), which an Authorize hook checks against the
//     groups of a group-scoped Thing; only the Server sets it.
//   - Limit per peer: the owner serves at most
//     TransportConfig.MaxPeerInteractions (DefaultMaxPeerInteractions,
//     1024) interactions of one remote peer at a time, both protocols
//     together, subscriptions included; a request beyond it is answered
//     with a 429 error message (title "Too many requests"; a one-way
//     request gets nothing) and the stream stays usable. Other peers are
//     served meanwhile.
//
// # Session streams
//
// Protocol proto.ProtocolInteractSession, "/lmos/interact/1.1.0", is the
// same wire format with one interaction after another on a stream. The
// consumer offers it first and falls back to /lmos/interact/1.0.0 (one-way
// requests always use 1.0.0). Where 1.0.0 closes a side of the stream, 1.1.0
// writes an empty frame (a zero length): the consumer after its last
// message of the interaction (right after a request that takes no further
// messages, after the unsubscribe that ends a subscription, or when the
// terminal message arrives), the owner right after the terminal message
// (or alone when a subscription ends without one). Once both have passed,
// the stream serves the next request; the Client keeps it idle
// (TransportConfig.MaxIdleStreams per owner, for IdleTimeout) and the
// Server waits SessionIdleTimeout for the next request, then closes it.
// Ordering, cancellation and back-pressure are those of 1.0.0, per
// interaction: an interaction that does not end cleanly (Close or a
// cancelled context before its end, a reset, a broken frame) resets its
// stream, which is never used again, so an abandoned interaction cannot
// leave replies for the next one; an owner whose consumer has not sent its
// empty frame within CloseGrace closes the stream instead (the replies stay
// readable for a slow consumer) and does not use it again. A request written on an idle stream the owner had just closed
// (cleanly, so it read nothing) is sent again on a new stream.
//
// A request that takes one reply (readProperty, writeProperty,
// writeMultipleProperties) and came with the consumer's end frame needs
// nothing from the stream until its reply is written: the owner's Engine
// runs its backend call on the stream's goroutine, and both ends queue
// room for one reply only. RequestTimeout and the owner's shutdown bound
// it; meanwhile one read waits on the stream, so that a consumer that
// closes or resets it cancels the backend call as for any interaction.
//
// Many interactions share one connection (yamux streams). go-libp2p's
// resource manager limits streams per peer and protocol; a node expecting
// many concurrent interactions raises the limits of /lmos/interact/1.0.0
// and /lmos/interact/1.1.0 (a stream refused by the local limits is a 503
// for the consumer; idle 1.1.0 streams count).
//
// # HTTP backend contract
//
// NewHTTPBackend(HTTPBackendConfig{URL: base}) forwards a Thing's interactions to an HTTP service
// (the --backend URL given at publish). Names are path-escaped; every
// request carries X-LMOS-Thing-ID and, when the consumer sent them, the
// W3C traceparent and tracestate headers. JSON bodies are
// application/json. Any non-2xx answer is an error for the consumer with
// the answer's status: an RFC 7807 body (application/problem+json) keeps
// its title and detail, any other body becomes the detail. A backend that
// cannot be reached is a 502.
//
//	readProperty     GET  {base}/properties/{name}
//	                 → 200, body: the value (JSON)
//	writeProperty    PUT  {base}/properties/{name}, body: the value
//	                 → 204 (the written value is reported back), or 200 with
//	                   the value now held
//	observeProperty  GET  {base}/properties/{name}/observe, Accept: text/event-stream
//	                 → 200 text/event-stream; each event's data is the new
//	                   value (JSON). One request per property however many
//	                   observers; it is closed when the last one leaves.
//	subscribeEvent   GET  {base}/events/{name}, Accept: text/event-stream
//	                 → 200 text/event-stream; each event's data is the event
//	                   data (JSON). One request per event however many
//	                   subscribers. If the stream ends, the subscribers get a
//	                   502 and may subscribe again.
//	invokeAction     POST {base}/actions/{name}, body: the input (none if
//	                 absent), X-LMOS-Correlation-ID: the invocation's id
//	                 → 200 (or 204): done; the body is the output
//	                 → 201 or 202 with Location: a long-running action. The
//	                   consumer gets actionStatus pending; the node polls
//	                   GET {Location} (every 500 ms, or Retry-After seconds)
//	                   for {"status": "pending"|"running"|"completed"|"failed"|"cancelled",
//	                   "output": …} and reports every change as an
//	                   actionStatus until a final status. cancelAction, a
//	                   timeout or the consumer leaving → DELETE {Location}.
//	streaming session (invokeAction with "stream": true)
//	                 POST {base}/actions/{name}, Content-Type: application/x-ndjson,
//	                 Accept: text/event-stream; the request body is one JSON
//	                 value per line (the invocation's input, then every
//	                 streamInput chunk) and ends at streamEnd.
//	                 → 200 text/event-stream, sent before the body ends (a Go
//	                   server calls http.ResponseController.EnableFullDuplex):
//	                   the session is accepted. Events without a type (or
//	                   type "output") carry one output chunk each; event
//	                   "completed" (data optional: the final output) ends it;
//	                   event "failed" with an RFC 7807 object ends it with
//	                   that error. The end of the stream completes it.
//	                 → 415: the backend takes no sessions for this action;
//	                   the node invokes it the ordinary way with the input
//	                   alone (the consumer sees a non-streaming invocation).
//
// Event streams are read with httpapi.ReadEvents (the parser of
// tmaxmax/go-sse): data spread over several data lines is joined with LF,
// comments and retry fields are skipped, one event may hold a value as
// large as a message.
//
// Timeouts are the engine's (RequestTimeout, ActionTimeout): a backend that
// does not answer in time is a 504 for the consumer.
//
// # Back-pressure
//
// Every session has a bounded reply queue (EngineConfig.QueueSize; on the
// consumer's node TransportConfig.QueueSize); nothing buffers without
// bound. What happens when a consumer does not read depends on the
// pattern:
//
//   - one-way: nothing goes back; the action runs to its end at the owner.
//   - request-reply and one request-multiple responses (invokeAction with
//     progress reports): the producer is the consumer's own backend call,
//     so it is slowed to the consumer's pace: the Client stops reading
//     when its queue is full, libp2p flow control stops the owner's
//     writes, the owner's queue fills and Exchange.Reply blocks the
//     backend. A consumer that reads nothing for WriteTimeout is dropped
//     (stream reset, action cancelled); ActionTimeout bounds the rest.
//   - streaming sessions: output as above; input the other way round:
//     Session.Send blocks while the Thing has InputQueueSize chunks
//     unread, so a consumer cannot outrun the Thing either.
//   - event notifications and observations: one backend call feeds every
//     subscriber, so a slow subscriber must not hold the others up: when
//     its queue is full it is dropped. It receives the notifications
//     already queued and then a 503 error ("subscriber too slow"), and its
//     session ends; it may subscribe again. Notifications are never
//     silently skipped. Over libp2p the owner's queue fills only once the
//     consumer's queue and the stream's flow-control window are full.
//
// # Events across nodes
//
// subscribeEvent from a remote consumer is a libp2p stream per
// subscription to the owner node. A gossipsub fan-out of a Thing's events
// (publish-subscribe to many nodes) needs no hook in the engine: the
// publisher is one more subscriber (subscribeAllEvents via Invoke) whose
// events it signs and publishes on the Thing's topic.
//
// # Instrumentation
//
// Instrument wraps any Invoker so that each interaction it opens is
// reported when it ends (side, transport, request type, status, duration:
// the node's metrics) and, with a tracer, is one OpenTelemetry span. The
// span continues the trace of the Invoke context or of the request's
// traceparent member, and the request carries the span's context on in
// that member: over libp2p to the owner node, whose instrumented engine
// continues it and hands it to the Thing's backend (HTTPBackend sends it
// as the traceparent header). The package itself records nothing.
package interact
