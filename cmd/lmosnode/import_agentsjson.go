package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/agentsjson"
)

// importAgentsJSONTimeout bounds `lmosnode import agents-json`: the node
// reads the document and its sources (each within 30 s) and publishes.
const importAgentsJSONTimeout = 90 * time.Second

func newImportAgentsJSONCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents-json URL",
		Short: "Publish one lmos:Tool per flow of an agents.json",
		Long: `agents-json makes the running node read the agents.json document at URL
(the Wildcard agents.json specification: flows over OpenAPI 3 sources)
and the OpenAPI documents of its sources, and publish one lmos:Tool per
flow, signed by the node. The Tool's action "run" takes
{"parameters": {...}, "requestBody": ...} as the flow's fields describe;
a call, from any node of the federation, runs the flow's operations
against the API the document describes and answers with the last one's
response. Flows whose operations are not found are reported and skipped.
The import is kept with the Things across restarts (the node reads the
document again at the first call); importing the same URL again updates
them; 'lmosnode things rm ID' removes one (docs/bridges.md#agentsjson).`,
		Example: `  lmosnode import agents-json https://api.example.com/.well-known/agents.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return callDaemon(cmd, importAgentsJSONTimeout, func(ctx context.Context, d *daemon) error {
				res, err := d.api.ImportAgentsJSON(ctx, args[0])
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], d.explain(err))
				}
				return output(cmd, res, func(res agentsjson.ImportResult) error {
					w := cmd.OutOrStdout()
					for _, t := range res.Tools {
						if _, err := fmt.Fprintf(w, "imported flow %s as %s (seq %d): %s\n", t.Flow, t.ThingID, t.Seq, strings.Join(t.Operations, ", ")); err != nil {
							return err
						}
					}
					for _, s := range res.Skipped {
						if _, err := fmt.Fprintf(w, "skipped flow %s: %s\n", s.Flow, s.Reason); err != nil {
							return err
						}
					}
					return nil
				})
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the API's answer as JSON")
	return cmd
}
