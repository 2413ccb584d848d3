package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/homedir"
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

// fileCheck is one file's entry in the --json output of td validate and
// td verify.
type fileCheck struct {
	File string `json:"file"`
	OK   bool   `json:"ok"`
	// Errors are validate's problems (pointer and message) or verify's
	// error.
	Errors []lmosproto.FieldError `json:"errors,omitempty"`
	// DIDKey, PeerID and Created name verify's signer.
	DIDKey  string     `json:"didKey,omitempty"`
	PeerID  string     `json:"peerID,omitempty"`
	Created *time.Time `json:"created,omitempty"`
}

func newTDValidateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check TDs against the TD 1.1 schema and the LMOS rules",
		Long: `validate checks each file against the official TD 1.1 JSON Schema and the
rules a schema cannot express (duplicate keys, undefined security names,
several rel "type" links, the LMOS context and capability rules). Each
problem is printed with the JSON pointer of the field. The exit status is 1
if any file is invalid. --json prints one entry per file.`,
		Example: `  lmosnode td validate examples/things/*.json`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			asJSON, _ := cmd.Flags().GetBool("json")
			out := cmd.OutOrStdout()
			invalid := 0
			checks := make([]fileCheck, 0, len(files))
			for _, file := range files {
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				c := fileCheck{File: file, OK: true}
				var verrs lmosproto.ValidationErrors
				switch err := lmosproto.ValidateTD(data); {
				case err == nil:
				case errors.As(err, &verrs):
					c.OK = false
					for _, e := range verrs {
						c.Errors = append(c.Errors, lmosproto.FieldError{Field: e.Pointer, Description: e.Message})
					}
				default:
					c.OK = false
					c.Errors = []lmosproto.FieldError{{Description: err.Error()}}
				}
				checks = append(checks, c)
				if !c.OK {
					invalid++
				}
				if asJSON {
					continue
				}
				if c.OK {
					fmt.Fprintf(out, "%s: valid\n", file)
				}
				for _, e := range verrs {
					fmt.Fprintf(out, "%s: %s\n", file, e.Error())
				}
				if !c.OK && len(verrs) == 0 {
					fmt.Fprintf(out, "%s: %s\n", file, c.Errors[0].Description)
				}
			}
			if asJSON {
				if err := printJSON(out, checks); err != nil {
					return err
				}
			}
			if invalid > 0 {
				return fmt.Errorf("%d of %d files invalid", invalid, len(files))
			}
			return nil
		},
	}
	cmd.Flags().Bool("json", false, "print one JSON entry per file")
	return cmd
}

func newTDSignCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sign FILE...",
		Short: "Sign TDs with the node's key and print them",
		Long: `sign validates each TD, sets lmos:seq (1 if absent, else incremented) and
adds a W3C Data Integrity proof (cryptosuite eddsa-jcs-2022) made with the
node's Ed25519 key; verificationMethod is the node's did:key. The signed TDs
are written to stdout one after the other, or with --json as one JSON
array. A TD needs an "id": a Thing is named by its publisher and its id.`,
		Example: `  lmosnode td sign examples/things/weather-agent.json > weather-agent.signed.json
  lmosnode td sign --json examples/things/*.json > signed.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			priv, err := homedir.LoadIdentity(home)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w (run 'lmosnode init' first)", err)
			}
			if err != nil {
				return err
			}
			key, err := homedir.SigningKey(priv)
			if err != nil {
				return err
			}
			signed := make([]json.RawMessage, 0, len(files))
			for _, file := range files {
				rec, err := signFile(file, key)
				if err != nil {
					return err
				}
				signed = append(signed, rec)
			}
			return output(cmd, signed, func(signed []json.RawMessage) error {
				for _, rec := range signed {
					var pretty bytes.Buffer
					if err := json.Indent(&pretty, rec, "", "  "); err != nil {
						return err
					}
					pretty.WriteByte('\n')
					if _, err := cmd.OutOrStdout().Write(pretty.Bytes()); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the signed TDs as one JSON array")
	return cmd
}

// signFile validates the TD in file, increments its lmos:seq and signs it.
func signFile(file string, key ed25519.PrivateKey) (json.RawMessage, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if err := lmosproto.ValidateTD(data); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	td, err := lmosproto.ParseTD(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	td.Seq++
	rec, err := lmosproto.SignThing(td, key, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return rec.Raw, nil
}

func newTDVerifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify FILE...",
		Short: "Verify signed TDs' proofs and print their signers",
		Long: `verify checks the W3C Data Integrity proof (eddsa-jcs-2022) of each signed
TD against the did:key named in its verificationMethod, whoever made it, and
prints the signer's did:key and libp2p peer ID. The exit status is 0 only
when every proof verifies. --json prints one entry per file.`,
		Example: `  lmosnode td verify weather-agent.signed.json
  lmosnode td verify --json *.signed.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			asJSON, _ := cmd.Flags().GetBool("json")
			out := cmd.OutOrStdout()
			checks := make([]fileCheck, 0, len(files))
			var errs []error
			for _, file := range files {
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				c := fileCheck{File: file}
				signer, err := lmosproto.VerifyDocument(data)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", file, err))
					c.Errors = []lmosproto.FieldError{{Description: err.Error()}}
					checks = append(checks, c)
					continue
				}
				created := signer.Created.UTC()
				c.OK, c.DIDKey, c.PeerID, c.Created = true, signer.DID, signer.PeerID.String(), &created
				invalidTD := lmosproto.ValidateTD(data)
				if invalidTD != nil {
					c.Errors = []lmosproto.FieldError{{Description: "the signed document is not a valid TD: " + invalidTD.Error()}}
				}
				checks = append(checks, c)
				if asJSON {
					continue
				}
				fmt.Fprintf(out, "%s: proof verifies\n", file)
				fmt.Fprintf(out, "did:key: %s\npeer ID: %s\ncreated: %s\n", c.DIDKey, c.PeerID, created.Format(time.RFC3339))
				if invalidTD != nil {
					fmt.Fprintf(out, "warning: the signed document is not a valid TD: %v\n", invalidTD)
				}
			}
			if asJSON {
				if err := printJSON(out, checks); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().Bool("json", false, "print one JSON entry per file")
	return cmd
}
