package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func newTDCmd() *cobra.Command {
	td := &cobra.Command{
		Use:   "td",
		Short: "Validate, sign and verify Thing Descriptions",
		Long: `td works on W3C WoT Thing Description files (TD 1.1 with the LMOS
vocabulary). None of its subcommands needs a running node.`,
	}
	td.AddCommand(newTDValidateCmd(), newTDSignCmd(), newTDVerifyCmd())
	return td
}

func newTDValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check TDs against the TD 1.1 schema and the LMOS rules",
		Long: `validate checks each file against the official TD 1.1 JSON Schema and the
rules a schema cannot express (duplicate keys, undefined security names,
several rel "type" links, the LMOS context and capability rules). Each
problem is printed with the JSON pointer of the field. The exit status is 1
if any file is invalid.`,
		Example: `  lmosnode td validate examples/things/*.json`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			out := cmd.OutOrStdout()
			invalid := 0
			for _, file := range files {
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				var verrs lmosproto.ValidationErrors
				switch err := lmosproto.ValidateTD(data); {
				case err == nil:
					fmt.Fprintf(out, "%s: valid\n", file)
				case errors.As(err, &verrs):
					invalid++
					for _, e := range verrs {
						fmt.Fprintf(out, "%s: %s\n", file, e.Error())
					}
				default:
					invalid++
					fmt.Fprintf(out, "%s: %v\n", file, err)
				}
			}
			if invalid > 0 {
				return fmt.Errorf("%d of %d files invalid", invalid, len(files))
			}
			return nil
		},
	}
}

func newTDSignCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sign FILE",
		Short: "Sign a TD with the node's key and print it",
		Long: `sign validates the TD, sets lmos:seq (1 if absent, else incremented) and adds
a W3C Data Integrity proof (cryptosuite eddsa-jcs-2022) made with the node's
Ed25519 key; verificationMethod is the node's did:key. The signed TD is
written to stdout. The TD needs an "id": a Thing is named by its publisher
and its id.`,
		Example: `  lmosnode td sign examples/things/weather-agent.json > weather-agent.signed.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			if err := lmosproto.ValidateTD(data); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			td, err := lmosproto.ParseTD(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			priv, err := node.LoadIdentity(home)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w (run 'lmosnode init' first)", err)
			}
			if err != nil {
				return err
			}
			key, err := node.SigningKey(priv)
			if err != nil {
				return err
			}
			td.Seq++
			rec, err := lmosproto.SignThing(td, key, time.Now())
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, rec.Raw, "", "  "); err != nil {
				return err
			}
			pretty.WriteByte('\n')
			_, err = cmd.OutOrStdout().Write(pretty.Bytes())
			return err
		},
	}
}

func newTDVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify FILE",
		Short: "Verify a signed TD's proof and print its signer",
		Long: `verify checks the W3C Data Integrity proof (eddsa-jcs-2022) of a signed TD
against the did:key named in its verificationMethod, whoever made it, and
prints the signer's did:key and libp2p peer ID. The exit status is 0 only
when the proof verifies.`,
		Example: `  lmosnode td verify weather-agent.signed.json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			signer, err := lmosproto.VerifyDocument(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: proof verifies\n", args[0])
			fmt.Fprintf(out, "did:key: %s\npeer ID: %s\ncreated: %s\n",
				signer.DID, signer.PeerID, signer.Created.UTC().Format(time.RFC3339))
			if err := lmosproto.ValidateTD(data); err != nil {
				fmt.Fprintf(out, "warning: the signed document is not a valid TD: %v\n", err)
			}
			return nil
		},
	}
}
