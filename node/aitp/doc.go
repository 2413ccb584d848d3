// Package aitp serves every lmos:Agent the node may see, its own and
// other nodes', as an AITP agent (Agent Interaction & Transaction
// Protocol, spec/aitp) over the transport AITP defines, AITP-T01 "Threads
// API" (JSON over HTTP, compatible with the OpenAI Assistants v2 API):
//
//	GET      /aitp/{publisher}/{id}                                   the agent: its capabilities, declared and not
//	POST     /aitp/{publisher}/{id}/v1/thread  (and …/v1/threads)     create a thread (actors and their capabilities, initial messages)
//	GET|POST /aitp/{publisher}/{id}/v1/threads/{thread_id}            retrieve a thread
//	POST     /aitp/{publisher}/{id}/v1/threads/{thread_id}/messages   post a message; answered once the agent's reply is in the thread
//	GET      /aitp/{publisher}/{id}/v1/threads/{thread_id}/messages   list the messages, oldest first (order=desc: newest first)
//
// A thread is an LMOS conversation (agora.Conversation): a streaming
// session of the agent's free-text action (a2abridge.TextAction, the A2A
// bridge's rule), each user message's content (joined with LF, mapped by
// a2abridge.TextInput) one input chunk, the output chunks the agent sends
// for it one assistant message (a string output as itself, another as its
// JSON text). An action that is not a session is invoked once per
// message. Calls go through the node's one invoker, so an agent on
// another node is called on its owner; a group-scoped agent of a group
// the node is not in is not found.
//
// Capabilities: an agent supports the AITP capabilities its TD declares
// in PropCapabilities ("lmos:aitpCapabilities", schema URLs); the node
// adds none and implements none itself (no payments, no wallets): a
// capability message is passed to the agent as text. GET on the agent
// lists the declared capabilities and, as unsupported_capabilities, the
// ones AITP defines that it does not declare; the thread's agent actor
// declares the same. A message whose content uses a capability (a JSON
// object string whose "$schema" is a capability schema URL) that the
// agent does not declare (same capability id and major version) is
// refused with 400 and the error shape (below), code
// "capability_not_supported". A message of a declared capability that
// AITP defines is checked against the capability's official schema
// (embedded, schemas/) and refused with code "invalid_capability_message"
// when it does not match; one of a capability of another origin is not
// checked (the node fetches no schema).
//
// Errors: AITP defines no error shape of its own; AITP-T01 follows the
// OpenAI API, whose shape is used: HTTP status and {"error": {"message",
// "type" ("invalid_request_error", "server_error"), "param", "code"}}.
//
// Not supported: attachments (no files API), messages of role
// "assistant" from the client, runs and the rest of the Assistants API,
// multi-party threads beyond the actors named at creation, forks
// (parent_id is always null). Threads are kept in memory, at most
// Config.MaxThreads, each Config.ThreadTTL after its last message, with
// at most Config.MaxMessages messages.
package aitp
