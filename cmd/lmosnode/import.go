package main

import "github.com/spf13/cobra"

// importFormats are the subcommands of `lmosnode import`, one per format;
// each import_<format>.go adds its own in an init function.
var importFormats []func() *cobra.Command

func newImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Publish Things for agents described in another format",
	}
	for _, sub := range importFormats {
		cmd.AddCommand(sub())
	}
	return cmd
}
