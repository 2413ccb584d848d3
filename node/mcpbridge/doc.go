// Package mcpbridge bridges the node and the Model Context Protocol
// (MCP 2026-07-28 and 2025-11-25) both ways, on
// github.com/modelcontextprotocol/go-sdk.
//
// # The node as an MCP server
//
// Server offers every action of the lmos:Agents and lmos:Tools the node
// may see — all its own, and of up to Config.MaxThings it learned from the
// federation: while there is room those learned first, then those
// find_things returned lately — as one MCP tool (ToolName: sanitized title, action and a hash of publisher, id and
// action; at most 63 characters of [A-Za-z0-9_-]). The tool's description
// is the action's (else the Thing's), its inputSchema and outputSchema the
// action's data schemas reduced to JSON Schema keywords; a schema that is
// not an object is wrapped as the one member "input" (arguments) or
// "output" (structuredContent). It adds find_things (the directory's
// search), read_property and the resource template lmos://things/{id}
// (the signed TD).
//
// A call goes the node's invocation path: Deps.Resolver (the rule of
// own.Things: a Thing scoped to groups this node is not in is refused
// with 403, a tool error), then Deps.Invokers (interact.Router.For): the
// engine for the node's own Things or the owner node over libp2p. Pending and running actionStatus messages
// (LMOS "one request, many responses") become notifications/progress
// when the request carries a progress token; notifications/cancelled
// becomes cancelAction. The server follows the directory's events and
// Refresh (membership changes): the tool list changes, and the SDK sends
// notifications/tools/list_changed; tools/list is paged (Config.PageSize).
// While no MCP session is open, the changes wait (a set of Thing keys) and
// are applied when a session initializes or sends any tools/ request, so
// a node no MCP client uses does not build tools for every Thing it
// learns.
//
// Handler serves Streamable HTTP (the node mounts it at /mcp behind the
// API's access guards) in both revisions (handler.go): a request of
// 2026-07-28 (its MCP-Protocol-Version header, or a _meta protocol
// version without header nor session) goes to the SDK's stateless
// handler (server/discover, subscriptions/listen, cancellation by closing
// the answer stream), every other to its stateful one (initialize, the
// session's GET stream, DELETE); both serve the one mcp.Server. Cacheable
// results carry the hints of Config.CacheTTL, scope private. The
// transport's plain-text refusals are answered as RFC 9457 problems;
// JSON-RPC errors stay JSON-RPC. Bridge connects a stdio MCP host to that
// endpoint (lmosnode mcp), in a session on 2025-11-25, request by request
// on 2026-07-28 (stdio_modern.go).
//
// ServerCardHandler serves the endpoint's MCP Server Card (SEP 2127,
// servercard.go) at PathServerCard and PathServerCardMCP: its name,
// version, the streamable-http remote and the protocol revisions it
// speaks (ProtocolRevisions), the bearer header when the API takes the
// token for every request. The AI Catalog (package aicatalog) lists it.
//
// # MCP servers as Things
//
// Imports publishes the tools of MCP servers (Streamable HTTP URL or a
// command launched and supervised over stdio) as lmos:Tool Things signed
// by the node, and serves their calls by calling the MCP server: a
// backend kind of its own beside the HTTP, WebSocket and SDK backends
// (see imports.go). The imports are kept in a file of the node's home.
package mcpbridge
