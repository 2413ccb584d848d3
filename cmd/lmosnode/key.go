package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/homedir"
)

func newKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Back up, restore, rotate and revoke the node's identity key",
		Long: `key exports and imports the node's Ed25519 identity key: the key that is
its peer ID and did:key and signs its Things. Whoever holds it can publish
in the node's name: keep the export as secret as the home directory.`,
		Example: `  lmosnode key export --out lmosnode-key.pem
  lmosnode key import lmosnode-key.pem --home /var/lib/lmosnode`,
	}
	cmd.AddCommand(newKeyExportCmd(), newKeyImportCmd(), newKeyRotateCmd(), newKeyRevokeCmd())
	return cmd
}

func newKeyExportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the identity key as PKCS #8 PEM",
		Long: `export writes the node's identity key as a PKCS #8 PEM "PRIVATE KEY" block
(readable by openssl) to stdout, or with --out to a new file of mode 0600
(an existing file is not overwritten).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			pem, err := homedir.ExportIdentity(home)
			if err != nil {
				return err
			}
			out, _ := cmd.Flags().GetString("out")
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(pem)
				return err
			}
			return atomicfile.Create(out, pem, 0o600)
		},
	}
	cmd.Flags().String("out", "", "write to this new file (mode 0600) instead of stdout")
	return cmd
}

func newKeyImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Restore the identity key from a backup",
		Long: `import makes the key in FILE ("-" for stdin; a PKCS #8 PEM export or an
identity.key file) the identity of the node in --home, creating the home
if needed. The node must not be running. A home that holds another key
keeps it unless --force: the peer ID changes with the key. The other files
of the home (config, datastore) are left as they are; the node publishes
its Things under the restored identity on its next start.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			var data []byte
			if args[0] == "-" {
				data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<10))
			} else {
				data, err = os.ReadFile(args[0])
			}
			if err != nil {
				return err
			}
			key, err := homedir.ParseIdentity(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			force, _ := cmd.Flags().GetBool("force")
			if err := homedir.ImportIdentity(home, key, force); err != nil {
				return err
			}
			id, did, err := identityNames(key.GetPublic())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "imported the identity of %s (%s) into %s\n", id, did, home)
			return nil
		},
	}
	cmd.Flags().Bool("force", false, "replace a different key already in the home")
	return cmd
}
