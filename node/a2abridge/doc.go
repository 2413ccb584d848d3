// Package a2abridge bridges the node to the Agent2Agent protocol (A2A
// 1.0 and 0.3, each over the JSON-RPC and HTTP+JSON bindings), both
// ways.
//
// Every lmos:Agent the node may see, its own and those of other nodes, is
// an A2A agent (Bridge):
//
//	GET  /.well-known/agent-card.json              the node's card: one skill per agent, the
//	                                               per-agent cards in the LMOS extension's params
//	GET  /a2a/agents                               the index, paged: thing id, publisher, endpoint, card
//	GET  /a2a/{publisher}/{id}[/.well-known/agent-card.json]   the agent's card
//	POST /a2a/{publisher}/{id}                     the agent's JSON-RPC endpoint
//	POST /a2a                                      the node-wide endpoint (metadata "lmos:agent")
//	POST {base}/message:send, {base}/message:stream       the HTTP+JSON binding (rest.go), {base}
//	GET  {base}/tasks/{id}, {base}/tasks                   /a2a/{publisher}/{id} or /a2a: each request
//	POST {base}/tasks/{id}:cancel, {base}/tasks/{id}:subscribe   is the call of its JSON-RPC method
//	GET  {base}/extendedAgentCard, {base}/tasks/{id}/pushNotificationConfigs[/{configId}]
//	POST {base}/v0.3/v1/message:send, …/v1/message:stream   A2A 0.3's HTTP+JSON binding (rest03.go):
//	GET  {base}/v0.3/v1/tasks/{id}, …/v1/card               0.3's proto JSON through pbconv and
//	POST {base}/v0.3/v1/tasks/{id}:cancel, …:subscribe      the 0.3 JSON-RPC translation
//	     {base}/v0.3/v1/tasks/{id}/pushNotificationConfigs[/{configId}]
//	GET  /a2a/jwks.json                            the key the cards are signed with
//	POST /api/v1/a2a/imports                       import an A2A agent (lmosnode a2a import)
//
// A card is built from the TD (skills from lmos:capabilities, else one
// per action), points at this node's endpoint for the agent, declares the
// API's bearer token when one is configured, and is signed with the
// node's Ed25519 key (JWS EdDSA over the JCS form, kid the node's did:key).
// The cards and the index's pages are rendered once per revision of the
// directory (and after Refresh, when the node's group memberships
// change) through an httpapi.DocCache, served with an ETag and 304; the
// node's card keeps under MaxNodeCardBytes (own agents first, skills as
// summaries, its description says what it left out), the index pages
// (cached.go).
// A message invokes one action of the agent (metadata "lmos:action", else
// its only action) through the node's normal invocation path: the engine
// for its own Things, the owner node over libp2p for the others
// (Deps.Invokers, interact.Router.For), after the node's one rule of
// which publisher serves a Thing (a group-scoped
// agent of a group this node is not in is refused, its card not served).
// The invocation is an A2A task: actionStatus running with output are
// artifact chunks (artifact "stream"), the final output the artifact
// "result", completed/failed/cancelled the task's terminal states, an
// error message a failed task with the problem as a data part.
// A message with metadata "lmos:stream": true opens an LMOS streaming
// session; messages naming its task are its input (streamInput), and
// "lmos:streamEnd": true ends it (streamEnd).
// SendStreamingMessage and SubscribeToTask stream the task's events as
// server-sent events; GetTask, ListTasks and CancelTask (an LMOS
// cancelAction) work on the tasks the bridge keeps for Config.Retention.
//
// Any A2A agent can join (Client): Bridge.Import reads its card, checks
// its signature with a key the operator pins or one the card's own https
// origin serves (a jku elsewhere is never followed; verify.go), refuses
// an unsigned or unverified card unless allowed (a card whose bytes do
// not hash to ImportRequest.CardDigest, set by the AI Catalog import, is
// refused), and publishes an
// lmos:Agent for it (recording the check as "lmos:cardSignature") with
// one action, "message", whose backend (kind KindA2A, card URL as backend
// URL, persisted with the Thing) forwards invocations over A2A.
//
// The bridge keeps one model, A2A 1.0's (wire.go), and speaks A2A 0.3 by
// translating at the edge. A JSON-RPC request without A2A-Version (or
// with 0.3) and a 0.3 method (message/send, message/stream, tasks/get,
// tasks/cancel, tasks/resubscribe) is translated to its 1.0 method and
// its answer and stream events back (jsonrpc03.go): kind-tagged parts,
// lower-case kebab states, the task itself as message/send's result,
// status-update events with final. A request of 0.3's HTTP+JSON binding
// (under {endpoint}/v0.3) is the call of its 0.3 method, its proto JSON
// read and written with a2a-go's pbconv (rest03.go). Every card is dual:
// beside the 1.0 supportedInterfaces (1.0 and 0.3 interfaces of both
// bindings) it has the 0.3 members url, preferredTransport "JSONRPC",
// additionalInterfaces, protocolVersion "0.3.0" and security, and is signed twice, over its 1.0
// view and over the whole card (wire03.go). An imported agent whose card
// offers JSON-RPC of 0.3 only is called with the 0.3 methods (client03.go).
//
// A2A 1.0 is implemented on net/http: github.com/a2aproject/a2a-go
// v0.3.3, the Go SDK, speaks 0.3 only. The 0.3 side uses that SDK's a2a
// package: its types are the 0.3 wire shapes the bridge translates to and
// from (and its a2apb/pbconv their proto form, 0.3's HTTP+JSON). Its server (a2asrv) and client (a2aclient) are used by the tests
// only: a2asrv would run a second task model beside the bridge's, and
// a2aclient ends a stream at an event over 64 KiB and reads an answer
// without a bound, where the bridge's JSON-RPC client bounds both to
// 4 MiB (docs/bridges.md).
package a2abridge
