// Package wsgateway carries LMOS interactions over WebSocket with the
// sub-protocol "lmosprotocol" (spec/lmos/11-websocket_binding.md). It has
// two endpoints, both thin adapters of the one message model
// (proto.Message, interact.Session); neither re-implements the engine's
// checks:
//
//   - Gateway, for consumers (mounted at e.g. /ws): any number of
//     interactions with any Thing the node's interact.Invoker reaches, over
//     one socket.
//   - AgentGateway, for agents (mounted at e.g. /ws/agent): an agent
//     process in any language, behind any firewall, dials its node,
//     registers its Things and answers the requests the node forwards to
//     it. Each registered Thing gets an interact.Backend that the node
//     attaches through the Registrar it implements.
//
// Both share one Config (queues, timeouts, pings, allowed origins):
// NewGateway(GatewayDeps{Invoker}, Config, ...Option) and
// NewAgentGateway(AgentDeps{Registrar}, Config, ...Option).
//
// # Handshake
//
// An HTTP GET upgraded with the standard WebSocket handshake that offers
// the sub-protocol lmosprotocol in Sec-WebSocket-Protocol; the answer
// (101) selects it. A WebSocket handshake that does not offer it is
// refused with 400 and an RFC 9457 application/problem+json body naming
// the sub-protocol (httpapi.WriteProblem, as every HTTP surface of the
// node answers errors); a request that is no WebSocket handshake gets the
// library's 426 Upgrade Required, and a refused origin its 403, as
// problems too (httpapi.AsProblems). Browser clients must come from the
// request's own host or a Config.OriginPatterns origin; clients without
// an Origin header (programs, agents) are always allowed.
//
// # Frames
//
// Every WebSocket message is one LMOS envelope (spec/lmos/10-
// communication_protocol.md): a JSON object in a text frame, or the same
// map in CBOR (proto.CBOR) in a binary frame. Replies use the codec of
// the request they answer. A message larger than proto.MaxMessageSize
// (4 MiB) closes the socket (status 1009, message too big) as soon as a
// frame header declares it: coder/websocket checks its read limit only
// as the payload arrives, so the connection it is handed reads every
// client frame header first (framelimit.go).
//
// The node pings every socket each Config.PingInterval (30 s) and
// closes one whose peer does not answer within Config.WriteTimeout, so
// that idle connections survive NATs and proxies and a vanished peer is
// noticed (clients must keep reading to answer pings, as every WebSocket
// library does while it reads).
//
// # Consumer endpoint
//
// A request (invokeAction, readProperty, writeProperty,
// writeMultipleProperties, observeProperty, subscribeEvent,
// subscribeAllEvents, a standalone queryAction or cancelAction…) opens an
// interaction named by its correlation: its correlationID, or its
// messageID when it has none. Every reply carries that name as
// correlationID, so a consumer may run any number of interactions at
// once on one socket and match replies by correlationID; replies of
// different interactions interleave, those of one interaction keep their
// order. A second request with the correlation of an interaction still
// open on the socket is answered with 409 Conflict.
//
// The consumer's further messages go to the open interaction with their
// correlationID: cancelAction, queryAction, streamInput and streamEnd to
// an invocation or streaming session; unsubscribeEvent,
// unsubscribeAllEvents or unobserveProperty to a subscription or
// observation. An unsubscribe or unobserve without correlationID (as in
// the spec's examples) ends the socket's subscription of the same Thing
// and event (observation of the same property; for unsubscribeAllEvents
// the subscribeAllEvents of the Thing). A follow-up that matches nothing
// open on the socket goes to the invoker on its own (a queryAction after
// the final status is answered from the engine's retained invocations).
// A follow-up the interaction refuses is answered with an error carrying
// the interaction's correlationID: 409 for streamInput to an invocation
// that is not an accepted streaming session, 400 for other misplaced
// messages.
//
// Failures arrive as error envelopes with the RFC 7807 members type,
// title, status, detail and instance (interact's titles and statuses:
// 400 bad envelope or input, 404 unknown Thing or affordance, 502 agent
// or owner node gone, 503…). An envelope that cannot be decoded is
// answered with 400 naming what could be recovered of it (thingID and
// correlationID or messageID, which the error also carries). One-way
// requests ("oneWay": true) get nothing back.
//
// Identity: every socket is one caller (interact.WithCaller, default a
// fresh "ws:<uuid>"; GatewayDeps.Caller maps a request to an authenticated
// identity): only that caller can query, cancel or stream into what it
// opened.
//
// Closing the socket (or a read or write failure) ends every interaction
// it opened: running actions are cancelled, subscriptions and
// observations end.
//
// # Back-pressure
//
// A socket has one bounded write queue (Config.QueueSize frames) drained
// by one writer; nothing buffers without bound:
//
//   - Replies of invocations, reads, writes and streaming sessions wait
//     for room: the interaction's own producer (the Thing) is slowed to the
//     consumer's pace, through the session's bounded queue to the backend.
//   - Notifications of subscriptions and observations never wait: when
//     the write queue is full, that subscription is dropped. Its consumer
//     gets the notifications already queued, then a 503 error ("subscriber
//     too slow") with the subscription's correlationID; it may subscribe
//     again. The socket and its other interactions go on.
//   - A consumer that reads nothing for Config.WriteTimeout (30 s) is
//     disconnected, which ends all its interactions.
//   - Follow-ups queue per interaction (Config.InputQueueSize); when a
//     streaming Thing does not keep up with streamInput, the socket's
//     reader waits, so a consumer cannot outrun the Thing (the socket is
//     one ordered stream; open several sockets for independent flows).
//
// # Agent endpoint and the registration extension
//
// lmosnode extension: two message types, valid only on agent sockets, in
// JSON text frames, answered with an acknowledgement or an error
// envelope whose correlationID is the request's messageID:
//
//	agent → node  {"messageType": "registerThing", "messageID": "<uuid>",
//	               "thingID": "<the TD's id, optional>", "data": <Thing Description>}
//	node → agent  {"messageType": "thingRegistered", "messageID": "<uuid>",
//	               "thingID": "<id>", "correlationID": "<registerThing's messageID>"}
//
//	agent → node  {"messageType": "unregisterThing", "messageID": "<uuid>", "thingID": "<id>"}
//	node → agent  {"messageType": "thingUnregistered", "messageID": "<uuid>",
//	               "thingID": "<id>", "correlationID": "<unregisterThing's messageID>"}
//
// The TD must have an id (and equal thingID when both are given); the
// node's Registrar validates, signs and publishes it and may refuse it
// (the error carries the Registrar's status, 400 by default). An agent
// registers any number of Things on one socket; a later registration of
// the same id (from this or another socket, e.g. after a reconnect)
// replaces the earlier one. Only the socket that registered a Thing last
// can unregister it.
//
// After registration the node forwards every interaction with the Thing
// to the agent as an ordinary envelope, after the engine has checked it
// against the TD (affordance, operation, input schema): invokeAction
// (with "stream": true for a streaming session), readProperty,
// writeProperty (writeMultipleProperties arrives as one writeProperty
// per property), observeProperty, subscribeEvent (subscribeAllEvents
// arrives as one subscribeEvent per event; one feed per event or
// property however many consumers subscribe). The forwarded request
// carries a correlationID: the consumer's, unless another interaction of
// the socket uses it (then a fresh one). The agent answers with
// actionStatus, propertyReading, propertyReadings, event or error
// envelopes carrying that correlationID, in order:
//
//   - invokeAction: any number of actionStatus pending/running, then one
//     completed or failed. A streaming session is accepted with an
//     actionStatus running marked "stream": true; the node then forwards
//     the consumer's chunks as streamInput and ends them with streamEnd.
//   - readProperty, writeProperty: one propertyReading.
//   - observeProperty, subscribeEvent: a propertyReading or event per
//     change, until the node sends unobserveProperty or unsubscribeEvent
//     (when the last consumer left).
//   - an error envelope ends any of them; its status (400–599, else 502),
//     title and detail reach the consumer.
//
// When the consumer cancels, leaves or times out, the node sends the agent
// cancelAction (invocations), unsubscribeEvent or unobserveProperty with
// the interaction's correlationID; replies arriving after that are
// dropped. Replies for no pending request are dropped; consumer requests
// sent on an agent socket are answered with 400.
//
// When the agent's socket closes (or its agent stops answering pings),
// interactions in flight end with 502
// (the agent disconnected) and new ones are answered with 503 (the agent
// is not connected) until an agent registers the Thing again; the Thing
// stays published meanwhile (the node may Unregister it on its own
// policy). The agent's socket is one ordered stream: a consumer that
// reads its action's replies slowly slows that agent socket down, until
// the consumer gateway's write timeout drops that consumer.
package wsgateway
