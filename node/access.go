package node

import (
	"net/http"
	"slices"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/gateway"
)

// Access to the API (docs/api.md#access). The node always has a token:
// Config.APIToken (or $LMOS_API_TOKEN) when set, else the one Init wrote to
// <home>/api-token (mode 0600). Requests that act as the node (adminRequest:
// publish, delete, group administration, connect, trust changes, agent
// registration on /ws/agent) must carry "Authorization: Bearer <token>"
// (httpapi.RequireBearer) on every address. Reads and invocations need it
// too with APIAuth.RequireTokenFor "all" (the default when the API is not on
// loopback or apiToken is set); with "admin" (the default on loopback
// otherwise) they are open to local clients, and the loopback Host check
// (httpapi.LoopbackHostOnly) keeps web pages of other hosts out. Clients
// send the token with httpapi.BearerClient.

// adminRequest reports whether r acts as the node and so always needs the
// token: every method but GET, HEAD and OPTIONS, except the invocations
// of the WoT HTTP binding (writeProperty, invokeAction, cancelAction) and
// of MCP (/mcp) and of the A2A bridge (their calls; an import acts as the
// node), and
// the agents' WebSocket (an agent registers Things as the node's own).
// pattern is the API mux's pattern for r.
func adminRequest(r *http.Request, pattern string) bool {
	if pattern == wsAgentPath {
		return true
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !invocation(pattern)
}

// invocation reports whether pattern is a route whose writes call Things
// (the WoT HTTP binding, MCP's Streamable HTTP endpoint, the A2A bridge's
// JSON-RPC endpoints) rather than act as the node.
func invocation(pattern string) bool {
	if pattern == mcpPath || slices.Contains(gateway.Patterns(), pattern) {
		return true
	}
	return pattern != a2abridge.PathImports && slices.Contains(a2abridge.Patterns(), pattern)
}

// APIToken returns the token of the node's API: Config.APIToken when set,
// else the one in <home>/api-token.
func (n *Node) APIToken() string { return n.apiToken }
