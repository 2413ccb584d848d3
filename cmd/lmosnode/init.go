package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node"
)

func newInitCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create the node's home directory, config and identity key",
		Long: `init creates the home directory (mode 0700) with config.json holding the
default configuration, a new Ed25519 identity key in identity.key (mode
0600) and the datastore directory. Existing files are kept: running init
again changes nothing. 'lmosnode up' does the same on start.`,
		Example: `  lmosnode init
  lmosnode init --home /var/lib/lmosnode`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			created, err := node.Init(home)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(created) == 0 {
				fmt.Fprintf(out, "%s is already initialised; nothing changed\n", home)
				return nil
			}
			for _, p := range created {
				fmt.Fprintf(out, "created %s\n", p)
			}
			key, err := node.LoadIdentity(home)
			if err != nil {
				return err
			}
			return printIdentity(out, key.GetPublic())
		},
	}
}
