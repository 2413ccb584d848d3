// Package interact is the interaction engine of a node: it carries every
// LMOS interaction pattern between a consumer and a Thing, whichever node
// each of them is on, with one message model (proto.Message) and thin
// transports around it.
//
// # One dispatch model
//
// A consumer opens an interaction with Invoker.Invoke(ctx, request) and
// gets a Session: the Thing's replies in order on a channel, closed after
// the terminal message (see Ends), and Send for the consumer's further
// messages (streamInput, streamEnd, cancelAction, queryAction,
// unsubscribe…). The Engine is the Invoker of the node's own Things; the
// Client is the Invoker of Things owned by another node, reached over a
// libp2p stream served by that node's Server, which feeds its Engine. A
// gateway (HTTP, WebSocket, MQTT) adapts a Session to its protocol and
// nothing more.
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
//	404 Thing not found       unknown thingID
//	404 Affordance not found  unknown property, action or event
//	404 Action not found      query/cancel/stream of an unknown correlationID
//	405 Operation not allowed write of a readOnly property, read of a writeOnly one, observe of a non-observable one
//	409 Conflict              a running invocation or open subscription has this correlationID
//	499 Cancelled             the interaction was abandoned
//	500 Internal error        the backend failed or panicked
//	501 Not implemented       the backend has no handler for the operation
//	502 Bad gateway           the backend (or the owner node) is unreachable or broke off
//	503 Service unavailable   no backend, node shutting down, slow subscriber dropped
//	504 Timeout               no final answer within RequestTimeout or ActionTimeout
//
// A cancelled invocation ends with actionStatus "cancelled", not an error.
//
// # Back-pressure
//
// Every session has a bounded reply queue (Options.QueueSize); nothing
// buffers without bound. What happens when a consumer does not read
// depends on who produces:
//
//   - request-reply, one request-multiple responses (invokeAction with
//     progress), streaming sessions: the producer is the consumer's own
//     backend call, so Exchange.Reply blocks until there is room: the
//     backend is slowed down to the consumer's pace. A consumer that stops
//     reading altogether is bounded by ActionTimeout (and by the libp2p
//     Server's write timeout, which drops the stream).
//   - streamed input: Session.Send blocks while the Thing has
//     Options.InputQueueSize chunks unread.
//   - events and observations: one backend call feeds every subscriber, so
//     a slow subscriber must not hold the others up: when its queue is full
//     it is dropped: it receives a 503 error ("subscriber too slow") after
//     the notifications already queued, and its session ends. It may
//     subscribe again. Events are never silently skipped.
//
// # Events across nodes
//
// subscribeEvent from a remote consumer is a libp2p stream per
// subscription to the owner node. A gossipsub fan-out of a Thing's events
// (publish-subscribe to many nodes) needs no hook in the engine: the
// publisher is one more subscriber (subscribeAllEvents via Invoke) whose
// events it signs and publishes on the Thing's topic.
package interact
