package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/aicatalog"
)

func newImportAICatalogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ai-catalog URL",
		Short: "Import the A2A agents and MCP servers an AI Catalog lists",
		Long: `ai-catalog makes the running node fetch the AI Catalog at URL (bounded,
with timeouts, no redirect to another host) and import its entries: an A2A
agent card entry through the A2A import (lmosnode a2a import), an MCP
Server Card entry's streamable-http endpoint through the MCP import
(lmosnode mcp import). Each entry's trust manifests are verified over the
card fetched from the entry; an entry none of whose manifests verifies is
refused unless --allow-unverified. See docs/bridges.md.`,
		Example: `  lmosnode import ai-catalog https://example.com/.well-known/ai-catalog.json
  lmosnode import ai-catalog --allow-unverified http://127.0.0.1:9000/.well-known/ai-catalog.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			allow, _ := cmd.Flags().GetBool("allow-unverified")
			req := aicatalog.ImportRequest{URL: args[0], AllowUnverified: allow}
			return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
				res, err := d.api.ImportAICatalog(ctx, req)
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], d.explain(err))
				}
				return output(cmd, res, func(res aicatalog.ImportResult) error {
					for _, e := range res.Entries {
						line := fmt.Sprintf("%s %s (%s, trust %s)", e.Status, e.Identifier, e.Type, e.Trust)
						if e.Problem != "" {
							line += ": " + e.Problem
						}
						if _, err := fmt.Fprintln(cmd.OutOrStdout(), line); err != nil {
							return err
						}
					}
					return nil
				})
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the API's answer as JSON")
	cmd.Flags().Bool("allow-unverified", false, "import the entries whose trust manifests do not verify too")
	return cmd
}
