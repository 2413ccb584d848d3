package main

import "github.com/spf13/cobra"

// newImportCmd is the parent of the imports of agents described in
// another format (import_<format>.go).
func newImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Publish Things for agents described in another format",
	}
	cmd.AddCommand(newImportAgentsJSONCmd(), newImportAICatalogCmd())
	return cmd
}
