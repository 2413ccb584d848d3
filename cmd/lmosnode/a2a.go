package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
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
again updates it; 'lmosnode things rm ID' removes it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := d.ctx(cmd)
			defer cancel()
			res, err := d.api.ImportA2A(ctx, args[0])
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], d.explain(err))
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "imported %s (seq %d), calls go to %s\n", res.ThingID, res.Seq, res.Endpoint)
			return err
		},
	}
	cmd.Flags().Bool("json", false, "print the API's answer as JSON")
	return cmd
}

func newA2ALsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the A2A endpoints of the agents this node may see",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := d.ctx(cmd)
			defer cancel()
			agents, err := d.api.A2AAgents(ctx)
			if err != nil {
				return d.explain(err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printJSON(cmd.OutOrStdout(), agents)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			_, _ = fmt.Fprintln(w, "NAME\tTHING ID\tPUBLISHER\tA2A URL")
			for _, a := range agents {
				_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", a.Name, a.ThingID, a.Publisher, a.URL)
			}
			return w.Flush()
		},
	}
	cmd.Flags().Bool("json", false, "print the agents as JSON")
	return cmd
}
