package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the running node to an MCP host over stdio; import MCP servers",
		Long: `mcp connects an MCP host that launches a command (Claude Desktop, IDEs,
agent frameworks) to the running node: it relays MCP's stdio transport
(JSON-RPC lines on stdin and stdout) to the node's Streamable HTTP endpoint
/mcp, with the API token of the home, and keeps the host's session when the
node restarts. The node is the MCP server: every
action of every agent and tool it knows, on this node or another, is a
tool, plus find_things and read_property. Nothing but MCP goes to stdout;
logs go to stderr. See docs/bridges.md.`,
		Example: `  # In the host's configuration: {"command": "lmosnode", "args": ["mcp"]}
  lmosnode mcp
  lmosnode mcp --home /srv/lmos`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDaemon(cmd, func(d *daemon) error {
				// Read again when the node restarts: it may listen elsewhere.
				endpoint := func() (string, error) {
					u, err := d.currentURL()
					return u + "/mcp", err
				}
				return mcpbridge.Bridge(cmd.Context(), endpoint, d.http, cmd.InOrStdin(), cmd.OutOrStdout())
			})
		},
	}
	cmd.AddCommand(newMCPImportCmd(), newMCPImportsCmd(), newMCPRemoveCmd())
	return cmd
}

func newMCPImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import URL | -- COMMAND [ARG...]",
		Short: "Publish the tools of an MCP server as lmos:Tool Things of this node",
		Long: `import makes an MCP server join the federation: the running node connects
to it (Streamable HTTP at URL, or COMMAND launched and supervised by the node,
speaking MCP on stdio), publishes each of its tools as an lmos:Tool Thing
signed by the node, and forwards the calls of those Things to the server.
The Things follow the server's tool list; while the server is unreachable
they are withdrawn, and the node reconnects with backoff. Imports are kept
in the home (mcp-imports.json) and resumed when the node restarts.

The command runs on the node's host with the node's rights: only the node's
owner (the API token, or loopback) may import.`,
		Example: `  lmosnode mcp import http://localhost:8931/mcp
  lmosnode mcp import -- npx -y @modelcontextprotocol/server-everything`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var src mcpbridge.Source
			switch dash := cmd.ArgsLenAtDash(); {
			case dash == 0 && len(args) > 0:
				src.Command = args
			case dash < 0 && len(args) == 1:
				src.URL = args[0]
			default:
				return usageErrorf("want one URL, or -- and a command with its arguments")
			}
			// The node answers after its first connection attempt.
			return callDaemon(cmd, time.Minute, func(ctx context.Context, d *daemon) error {
				info, err := d.api.ImportMCP(ctx, src)
				if err != nil {
					return err
				}
				return output(cmd, info, func(info mcpbridge.ImportInfo) error {
					printImport(cmd.OutOrStdout(), info)
					return nil
				})
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the import as JSON")
	return cmd
}

func newMCPImportsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "imports",
		Short: "List the MCP servers imported into the running node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return query(cmd, func(ctx context.Context, api *apiclient.Client) ([]mcpbridge.ImportInfo, error) {
				return api.MCPImports(ctx)
			}, func(infos []mcpbridge.ImportInfo) error {
				for _, info := range infos {
					printImport(cmd.OutOrStdout(), info)
				}
				return nil
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the imports as JSON")
	return cmd
}

func newMCPRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Stop an MCP server import and withdraw its Things",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
				return d.api.RemoveMCPImport(ctx, args[0])
			})
		},
	}
}

func printImport(w io.Writer, info mcpbridge.ImportInfo) {
	src := info.URL
	if src == "" {
		src = strings.Join(info.Command, " ")
	}
	fmt.Fprintf(w, "%s\t%s\t%s", info.ID, info.State, src)
	if info.Server != "" {
		fmt.Fprintf(w, "\t(%s)", info.Server)
	}
	if info.Error != "" {
		fmt.Fprintf(w, "\t%s", info.Error)
	}
	fmt.Fprintln(w)
	for _, t := range info.Things {
		fmt.Fprintf(w, "  %s\t%s\n", t.Tool, t.ThingID)
	}
}
