package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/homedir"
)

// initResult is what 'lmosnode init --json' prints.
type initResult struct {
	Home    string   `json:"home"`
	Created []string `json:"created"`
	PeerID  string   `json:"peerID"`
	DIDKey  string   `json:"didKey"`
}

func newInitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the node's home directory, config and identity key",
		Long: `init creates the home directory (mode 0700) with config.json holding the
default configuration, a new Ed25519 identity key in identity.key (mode
0600) and the datastore directory. Existing files are kept: running init
again changes nothing. 'lmosnode up' does the same on start. --json prints
the home, the files created and the node's peer ID and did:key.`,
		Example: `  lmosnode init
  lmosnode init --home /var/lib/lmosnode`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			created, err := homedir.Init(home)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				key, err := homedir.LoadIdentity(home)
				if err != nil {
					return err
				}
				id, did, err := identityNames(key.GetPublic())
				if err != nil {
					return err
				}
				return printJSON(out, initResult{Home: home, Created: append([]string{}, created...), PeerID: id.String(), DIDKey: did})
			}
			if len(created) == 0 {
				fmt.Fprintf(out, "%s is already initialised; nothing changed\n", home)
				return nil
			}
			for _, p := range created {
				fmt.Fprintf(out, "created %s\n", p)
			}
			key, err := homedir.LoadIdentity(home)
			if err != nil {
				return err
			}
			return printIdentity(out, key.GetPublic())
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}
