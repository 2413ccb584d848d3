// Package agora serves every lmos:Agent the node may see, its own and
// other nodes', as a server of the Agora protocol (two-party JSON
// exchanges with protocol documents named by their SHA1;
// spec/agora/specification.md):
//
//	GET  /agora/protocols/{hash}                          a protocol document by its hash (text)
//	GET  /agora/{publisher}/{id}/wellknown                §9: the agent's protocol hashes and documents
//	POST /agora/{publisher}/{id}                          an Agora request to the agent
//	POST /agora/{publisher}/{id}/conversations/{cid}      a follow-up of a multi-round conversation (§7.2)
//
// Each action of an agent is one protocol: its document (Document) holds
// YAML metadata (name, description, multiround, lmos-thing, lmos-action),
// "---" and a Markdown specification with the action's input and output
// schemas in their JCS form. It is rendered from the signed TD alone, so
// every node renders the same text and the protocol hash (SHA1 of the
// text, §8.2) of an agent's action is the same on every node.
//
// A request naming a protocolHash of the agent calls that action with
// the body as its input (the engine checks it against the action's
// schema); an unknown hash is the Agora failure "Unsupported protocol".
// A request without protocolHash is natural language: it goes to the
// agent's free-text action, picked and its input built from the text by
// the A2A bridge's rule (a2abridge.TextAction, TextInput). A request
// with "multiround": true opens an LMOS streaming session of the action
// (Conversation): its id is the conversationId, each follow-up request a
// streamInput, each response body the output chunks sent since the last
// response, "lmos:end": true a streamEnd; the conversation expires
// Config.ConversationTTL after its last request and its session is then
// cancelled. The agent's failures (invalid input, errors) are
// protocol-level errors: status "success" with {"error": …} as the body
// (§10.3). Calls go through the node's one invoker (Deps.Invokers,
// interact.Router.For), so an agent on another node is called on its
// owner node; a group-scoped agent of a group this node is not in is not
// found (Deps.Resolver, Deps.Visible, as for the A2A bridge).
//
// The documents are rendered once per revision of the directory and of
// what the node may see (Refresh) and served from an httpapi.DocCache
// with an ETag. Conversations are kept in memory, at most
// Config.MaxConversations. Agora requires HTTPS; the node serves what
// its API is configured with (TLS in front of it in production).
package agora
