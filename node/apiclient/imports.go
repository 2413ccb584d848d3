package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/agentsjson"
	"github.com/lmosnode/lmosnode/node/aicatalog"
	"github.com/lmosnode/lmosnode/node/anp"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
)

// maxAgentIndex bounds the agent index of the A2A bridge, as its client
// bounds an agent card.
const maxAgentIndex = 1 << 20

// ImportMCP imports the MCP server src: the node connects to it and
// publishes its tools (the answer comes after the first connection
// attempt).
func (c *Client) ImportMCP(ctx context.Context, src mcpbridge.Source) (mcpbridge.ImportInfo, error) {
	return call[mcpbridge.ImportInfo](ctx, c, request{method: http.MethodPost, path: mcpbridge.ImportsPath, body: src})
}

// MCPImports lists the node's MCP server imports.
func (c *Client) MCPImports(ctx context.Context) ([]mcpbridge.ImportInfo, error) {
	return call[[]mcpbridge.ImportInfo](ctx, c, request{method: http.MethodGet, path: mcpbridge.ImportsPath})
}

// RemoveMCPImport removes the MCP server import id; its Things are
// withdrawn.
func (c *Client) RemoveMCPImport(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: mcpbridge.ImportsPath + "/" + url.PathEscape(id)})
	return err
}

// ImportA2A asks the node to import the A2A agent whose card is at
// req.Card (with the keys it pins, or allowing an unsigned card): it
// publishes an lmos:Agent whose calls go to the agent.
func (c *Client) ImportA2A(ctx context.Context, req a2abridge.ImportRequest) (a2abridge.ImportResult, error) {
	return call[a2abridge.ImportResult](ctx, c, request{method: http.MethodPost, path: a2abridge.PathImports,
		body: req, max: maxAgentIndex})
}

// A2AAgents lists the agents the node serves over A2A (GET /a2a/agents,
// every page).
func (c *Client) A2AAgents(ctx context.Context) ([]a2abridge.AgentRef, error) {
	var all []a2abridge.AgentRef
	path := a2abridge.PathAgents + "?limit=" + strconv.Itoa(a2abridge.MaxIndexLimit)
	for path != "" {
		idx, err := call[a2abridge.AgentIndex](ctx, c, request{method: http.MethodGet, path: path, max: maxAgentIndex})
		if err != nil {
			return all, err
		}
		all, path = append(all, idx.Agents...), ""
		if next, err := url.Parse(idx.Next); err == nil && idx.Next != "" && len(idx.Agents) > 0 {
			path = next.RequestURI()
		}
	}
	return all, nil
}

// ImportAICatalog asks the node to import the A2A and MCP entries of the
// AI Catalog at req.URL.
func (c *Client) ImportAICatalog(ctx context.Context, req aicatalog.ImportRequest) (aicatalog.ImportResult, error) {
	return call[aicatalog.ImportResult](ctx, c, request{method: http.MethodPost, path: aicatalog.PathImports,
		body: req, max: maxAgentIndex})
}

// ImportANP asks the node to import the ANP agent whose agent description
// is at req.URL: it publishes an lmos:Agent whose actions are the
// description's JSON-RPC methods, called signed with the node's did:wba.
func (c *Client) ImportANP(ctx context.Context, req anp.ImportRequest) (anp.ImportResult, error) {
	return call[anp.ImportResult](ctx, c, request{method: http.MethodPost, path: anp.PathImports, body: req, max: maxAgentIndex})
}

// ImportAgentsJSON asks the node to import the agents.json at docURL: it
// publishes one lmos:Tool per flow, whose calls go to the API the
// document describes.
func (c *Client) ImportAgentsJSON(ctx context.Context, docURL string) (agentsjson.ImportResult, error) {
	return call[agentsjson.ImportResult](ctx, c, request{method: http.MethodPost, path: agentsjson.PathImports,
		body: agentsjson.ImportRequest{URL: docURL}, max: maxAgentIndex})
}
