package node

import (
	"net/http"

	"github.com/lmosnode/lmosnode/node/api"
)

// apiHandler is the local HTTP API (package api) over n's surfaces.
func (n *Node) apiHandler() http.Handler {
	return api.Handler(api.Deps{
		Info:       n.Info,
		Ready:      n.Ready,
		TDD:        n.tdd,
		Gateway:    n.gateway,
		Groups:     n.groupAPI,
		Trust:      n.trustAPI,
		A2A:        n.a2a,
		Agora:      n.agora,
		AITP:       n.aitp,
		ANP:        n.anp,
		AgentsJSON: n.agentsJSON,
		MCP:        n.mcp.Handler(),
		MCPImports: n.mcpImports.Handler(),
		AICatalog:  n.aiCatalog,
		ServerCard: n.serverCard,
		WS:         n.ws,
		WSAgent:    n.wsAgent,
		Console:    n.console,
		Metrics:    n.metrics,
		Log:        n.log,
		Tracing:    n.tracing,
	}, api.Config{Token: n.apiToken, TokenForAll: n.tokenForAll, CORS: n.cfg.APICORS, Limits: n.cfg.APILimits, Pprof: n.cfg.Pprof})
}

// APIToken returns the token of the node's API: Config.APIToken when set,
// else the one in <home>/api-token.
func (n *Node) APIToken() string { return n.apiToken }
