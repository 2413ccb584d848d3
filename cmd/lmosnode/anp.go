package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/anp"
)

func newANPCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "anp",
		Short: "Agent Network Protocol (ANP): import ANP agents",
		Long: `The node speaks ANP both ways (docs/identity.md#anp, docs/bridges.md):
with anp.did set it serves its did:wba DID document, an ANP agent
description for every lmos:Agent and lmos:Tool at
/anp/agents/{publisher}/{thing id}/ad.json, the discovery collection at
/.well-known/agent-descriptions, and accepts DID-WBA signed requests
(ANP-02) on the routes that call Things. 'anp import' makes an ANP agent
join the federation.`,
		Example: `  lmosnode anp import https://grand-hotel.com/agents/hotel-assistant/ad.json`,
	}
	c.AddCommand(newANPImportCmd())
	return c
}

func newANPImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import AD-URL",
		Short: "Publish an ANP agent as an lmos:Agent of this node",
		Long: `import makes the running node read the ANP agent description (ANP-07) at
AD-URL (at most 1 MiB, redirects only on the same host) and its JSON-RPC
interface (protocol openrpc, inline or by URL), and publish an
lmos:Agent, signed by the node, with one action per JSON-RPC method (the
method's by-name params as the action's input object). Calls of those
actions, from any node of the federation and over any transport, go to
the interface's server as JSON-RPC 2.0 requests signed with the node's
did:wba (DID-WBA: RFC 9421 signatures and Content-Digest, keyid the
node's key in its DID document; anp.did must be set for the agent to
accept them). Importing the same URL again updates the Thing; 'lmosnode
things rm ID' removes it.`,
		Example: `  lmosnode anp import https://grand-hotel.com/agents/hotel-assistant/ad.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
				res, err := d.api.ImportANP(ctx, anp.ImportRequest{URL: args[0]})
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], d.explain(err))
				}
				return output(cmd, res, func(res anp.ImportResult) error {
					_, err := fmt.Fprintf(cmd.OutOrStdout(), "imported %s (seq %d), methods %s, calls go to %s\n",
						res.ThingID, res.Seq, strings.Join(res.Methods, ", "), res.Endpoint)
					return err
				})
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the API's answer as JSON")
	return cmd
}
