package node

import (
	"path/filepath"

	"github.com/lmosnode/lmosnode/node/mcpbridge"
	"github.com/lmosnode/lmosnode/node/version"
)

// buildMCP builds the node's MCP server over the directory and the same
// invocation path as the HTTP binding.
func (n *Node) buildMCP() error {
	mcpbridge.Version = version.Version
	var err error
	n.mcp, err = mcpbridge.New(mcpbridge.Deps{
		Directory: n.dir,
		Self:      n.peerID,
		Resolver:  n.own,
		Invokers:  n.bridgeRouter,
		Visible:   n.own.Visible,
		Orgs:      n.orgs,
	}, mcpbridge.Config{BearerAuth: n.tokenForAll, MaxThings: n.cfg.MCPTools}, mcpbridge.WithLogger(n.log.With("component", "mcp")))
	return err
}

// MCP returns the node's MCP server.
func (n *Node) MCP() *mcpbridge.Server { return n.mcp }

// mcpImportsFile keeps the node's MCP server imports in its home.
const mcpImportsFile = "mcp-imports.json"

// buildMCPImports resumes the MCP servers imported earlier: their tools
// are the node's own Things, served by calls to the server.
func (n *Node) buildMCPImports() error {
	var err error
	n.mcpImports, err = mcpbridge.NewImports(n.own, mcpbridge.ImportsConfig{File: filepath.Join(n.cfg.Home, mcpImportsFile)},
		mcpbridge.WithLogger(n.log.With("component", "mcp-import")))
	return err
}

// MCPImports returns the node's MCP server imports.
func (n *Node) MCPImports() *mcpbridge.Imports { return n.mcpImports }
