package main

import (
	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/mcpbridge"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the running node to an MCP host over stdio; import MCP servers",
		Long: `mcp connects an MCP host that launches a command (Claude Desktop, IDEs,
agent frameworks) to the running node: it relays MCP's stdio transport
(JSON-RPC lines on stdin and stdout) to the node's Streamable HTTP endpoint
/mcp, with the API token of the home. The node is the MCP server: every
action of every agent and tool it knows, on this node or another, is a
tool, plus find_things and read_property. Nothing but MCP goes to stdout;
logs go to stderr. See docs/bridges.md.`,
		Example: `  # In the host's configuration: {"command": "lmosnode", "args": ["mcp"]}
  lmosnode mcp
  lmosnode mcp --home /srv/lmos`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			return mcpbridge.Bridge(cmd.Context(), d.apiURL+"/mcp", d.http, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	return cmd
}
