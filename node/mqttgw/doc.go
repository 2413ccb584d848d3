// Package mqttgw is the MQTT binding of a node: it exposes the node's own
// Things on an MQTT broker (given by URL) with the LMOS message envelope
// (proto.Message) as payload. Like every transport it only adapts
// interact.Sessions: requests that arrive on the broker are invoked through
// an interact.Invoker and the Sessions' replies are published back.
//
// New(Deps{Invoker, Things}, Config{BrokerURL: …}, ...Option) builds a
// Gateway; Start connects it.
//
// # Topic scheme
//
// With T the escaped thingID (see below), N the escaped affordance name and
// an optional Config.Prefix P (then every topic starts with "P/"):
//
//	T/events/N              gateway → broker: every event of the Thing, the
//	                        "event" envelope (JSON), QoS Config.QoS, not retained.
//	T/properties/N          gateway → broker: every value of an observable
//	                        property, the "propertyReading" envelope, retained,
//	                        so that a new subscriber sees the latest value.
//	T/properties/N/read     consumer → gateway: read request (reply: propertyReading).
//	T/properties/N/write    consumer → gateway: write request (reply: propertyReading).
//	T/actions/N             consumer → gateway: invokeAction (replies: every
//	                        actionStatus up to the final one, or an error),
//	                        and the follow-ups of a running invocation:
//	                        cancelAction, queryAction, streamInput, streamEnd.
//
// # Follow-ups and streaming sessions
//
// An invokeAction with a response topic stays reachable while it runs
// (its interact.Session is open): a cancelAction, queryAction, streamInput
// or streamEnd envelope published to the same T/actions/N with the
// invocation's correlation is passed to that session (Session.Send), in the
// order the broker delivered them. The correlation is the MQTT v5
// CorrelationData of the invokeAction or, for v3.1.1 clients, the
// envelope's correlationID (the invokeAction's correlationID, or its
// messageID when it had none). The replies these follow-ups cause (the
// queryAction's actionStatus, the final "cancelled" status, the output
// chunks of a stream) are replies of the invocation: they go to the
// invocation's response topic with its correlation data. A follow-up whose
// correlation names no running invocation is answered with a 404 error on
// the follow-up's own response topic; so is one that arrives after the
// invocation ended; a streamInput before the Thing accepted the session
// gets a 409.
//
// An invokeAction with "stream": true opens a streaming session: the
// Thing's acceptance (an actionStatus running with "stream": true), every
// output chunk and the final status are published to the response topic;
// the consumer sends further input with streamInput and ends it with
// streamEnd, both on T/actions/N with the invocation's correlation.
//
// Open invocations count against Config.MaxInFlight like every request;
// Close ends every open session.
//
// The gateway subscribes to the three request topics of each exposed
// Thing (T/actions/+, T/properties/+/read, T/properties/+/write), never to
// a wildcard over Things, so several nodes may share one broker.
//
// # Requests
//
// A request payload is either
//
//   - a full LMOS envelope: a JSON object with a string member
//     "messageType" (or a CBOR map, recognised by proto.SniffCodec). Its
//     messageType must fit the topic (invokeAction or a follow-up, see
//     below, readProperty, writeProperty); thingID and the affordance name may be left out and
//     must otherwise match the topic. The replies use the request's codec.
//   - anything else: the bare value. On T/actions/N it is the action input
//     (an empty payload: no input), on T/properties/N/write the value to
//     write; on T/properties/N/read the payload is ignored. The gateway
//     builds the envelope; replies are JSON.
//
// An action input that is itself a JSON object with a "messageType" member
// must therefore be sent wrapped in an invokeAction envelope.
//
// Replies are published (QoS Config.QoS, not retained) to the response
// topic with the request's correlation data:
//
//   - MQTT v5: the PUBLISH properties ResponseTopic and CorrelationData;
//     every reply carries the same CorrelationData.
//   - MQTT v3.1.1 clients, which have no properties: the envelope member
//     "responseTopic" (an lmosnode extension member) names the response
//     topic, and the envelope's correlationID (or its messageID) is the
//     correlationID of every reply, as always in LMOS.
//
// A request without a response topic is one-way: it is invoked, its
// replies are dropped. A response topic with a wildcard is refused.
//
// Every failure is an "error" envelope with the RFC 7807 members (type,
// title, status, detail, instance) on the response topic: the engine's
// errors (400 invalid input, 404 unknown Thing or affordance, 405, 504…)
// unchanged, and the gateway's own:
//
//	400 Bad request          undecodable envelope, messageType/thingID/name not fitting the topic
//	404 Not found            a follow-up naming no running invocation
//	409 Conflict             streamInput/streamEnd before the Thing accepted the session
//	503 Service unavailable  more than Config.MaxInFlight requests running
//
// All MQTT consumers share one caller identity (Config.CallerID, default
// DefaultCallerID) towards the engine.
//
// # Topic-safe identifiers
//
// MQTT topic names are UTF-8 and must not contain the wildcards '+' and
// '#' or U+0000; '/' separates levels and a leading '$' is reserved for
// the broker. Thing IDs and affordance names are therefore escaped with a
// percent rule (EscapeTopicLevel): '%' → "%25", '/' → "%2F", '+' → "%2B",
// '#' → "%23", U+0000 → "%00", and a leading '$' → "%24". Everything else
// (':' included) stays as it is, so "urn:uuid:…" IDs appear unchanged. The
// rule is reversible (UnescapeTopicLevel) and maps different IDs to
// different levels.
//
// # Events and observed properties
//
// For each exposed Thing with events the gateway holds one
// subscribeAllEvents session and, for each observable property, one
// observeProperty session, opened once the broker is reachable. Right
// after opening an observation the gateway reads the property (unless it
// is writeOnly) and publishes that reading, so the retained topic holds the
// current value from the start. If such a session ends (an error such as a
// 503 for a subscriber too slow, or the backend's stream ending) it is
// opened again after Config.ResubscribeDelay. While the broker is
// unreachable notifications are dropped (events are not queued across
// outages); a broker that lost its retained values (restarted without
// persistence) gets them back with the next change.
//
// # Connection
//
// autopaho keeps the connection: it reconnects with back-off and the
// gateway subscribes again on every (re)connection (clean start, no
// session kept at the broker). Sync re-reads the ThingLister (also every
// Config.SyncInterval): new Things are exposed, Things that left stop
// being served and their retained property values are cleared.
//
// # Concurrency
//
// A Gateway is safe for concurrent use. Every goroutine it starts ends in
// Close.
package mqttgw
