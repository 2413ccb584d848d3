package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/apiclient"
)

func newA2ACmd() *cobra.Command {
	a2a := &cobra.Command{
		Use:   "a2a",
		Short: "Bridge to the Agent2Agent protocol (A2A)",
		Long: `Every lmos:Agent the node may see is an A2A agent on the node's API: the
node's card is at /.well-known/agent-card.json, each agent's at
/a2a/{publisher}/{thing id}/.well-known/agent-card.json (docs/bridges.md).
'a2a import' makes an A2A agent join the federation; 'a2a ls' lists the
A2A endpoints of the agents. Both talk to the running node.`,
		Example: `  lmosnode a2a import https://agent.example.com/.well-known/agent-card.json
  lmosnode a2a ls`,
	}
	a2a.AddCommand(newA2AImportCmd(), newA2ALsCmd())
	return a2a
}

func newA2AImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import CARD-URL",
		Short: "Publish an A2A agent as an lmos:Agent of this node",
		Long: `import makes the running node read the A2A agent card at CARD-URL and
publish an lmos:Agent for the agent, signed by the node: title and
description from the card, lmos:capabilities from its skills, one action
"message". Calls of that action, from any node of the federation and over
any transport, are forwarded to the agent's JSON-RPC endpoint over A2A.
The import is kept with the Thing across restarts; importing the same URL
again updates it; 'lmosnode things rm ID' removes it.

The card must be signed (A2A card signatures: a JWS over its JCS form) by
a key you pin with --key (a JWK or JWK Set file, e.g. the agent's
jwks.json), or by a key its own https origin serves (the signature's jku
on the card URL's scheme, host and port; a jku elsewhere is not
followed). An unsigned card, or one whose signature does not verify, is
imported only with --allow-unsigned. The published TD records which it
was ("lmos:cardSignature": verified, unsigned or unverified, with the kid).`,
		Example: `  lmosnode a2a import https://agent.example.com/.well-known/agent-card.json
  lmosnode a2a import --key agent-jwks.json http://127.0.0.1:9000/.well-known/agent-card.json
  lmosnode a2a import --allow-unsigned http://127.0.0.1:9000/.well-known/agent-card.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			allow, _ := cmd.Flags().GetBool("allow-unsigned")
			req := a2abridge.ImportRequest{Card: args[0], AllowUnsigned: allow}
			if f, _ := cmd.Flags().GetString("key"); f != "" {
				b, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				if _, err := a2abridge.ParseKeys(b); err != nil {
					return fmt.Errorf("--key %s: %w", f, err)
				}
				req.Keys = b
			}
			return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
				res, err := d.api.ImportA2A(ctx, req)
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], d.explain(err))
				}
				return output(cmd, res, func(res a2abridge.ImportResult) error {
					sig := res.CardSignature.Status
					if res.CardSignature.Kid != "" {
						sig += " (kid " + res.CardSignature.Kid + ", key " + res.CardSignature.Key + ")"
					}
					_, err := fmt.Fprintf(cmd.OutOrStdout(), "imported %s (seq %d), calls go to %s; card signature %s\n", res.ThingID, res.Seq, res.Endpoint, sig)
					return err
				})
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the API's answer as JSON")
	cmd.Flags().String("key", "", "a JWK or JWK Set `file` with the key(s) the card's signature must verify with")
	cmd.Flags().Bool("allow-unsigned", false, "import the card even when it is unsigned or its signature does not verify")
	return cmd
}

func newA2ALsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the A2A endpoints of the agents this node may see",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return query(cmd, func(ctx context.Context, api *apiclient.Client) ([]a2abridge.AgentRef, error) {
				return api.A2AAgents(ctx)
			}, func(agents []a2abridge.AgentRef) error {
				return table(cmd, "NAME\tTHING ID\tPUBLISHER\tA2A URL", agents, "", func(a a2abridge.AgentRef) []string {
					return []string{a.Name, a.ThingID, a.Publisher, a.URL}
				})
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the agents as JSON")
	return cmd
}
