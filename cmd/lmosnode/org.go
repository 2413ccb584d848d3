package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/homedir"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func newOrgCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "org",
		Short: "Bind this node to an organisation's domain (did:web, did:wba)",
		Long: `org binds the node to an organisation DID served from the organisation's
domain, so that other nodes show the organisation (its domain) beside this
node's Things, and trust lists can name the organisation.

  1. 'lmosnode org doc DID' prints the DID document that lists this node's
     key (add --node for each further node of the organisation) and the
     HTTPS URL where the organisation hosts it;
  2. 'lmosnode org set DID' binds the node: every TD it publishes claims the
     DID (lmos:organization, under the TD's signature). Restart the node.

A DID is did:web:DOMAIN or did:wba:DOMAIN, with an optional port
(DOMAIN%3APORT) and path (DOMAIN:dept:sales). See docs/identity.md.`,
		Example: `  lmosnode org doc did:web:example.com > did.json
  lmosnode org set did:web:example.com
  lmosnode org show`,
	}
	cmd.AddCommand(newOrgDocCmd(), newOrgSetCmd(), newOrgShowCmd())
	return cmd
}

func newOrgDocCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doc DID",
		Short: "Print the organisation's DID document listing its nodes' keys, and where to host it",
		Long: `doc prints the DID document of DID that lists the keys of the
organisation's nodes (verificationMethod, referenced from assertionMethod and
authentication): this node's key, unless --no-self, and each --node (a
did:key, as 'lmosnode id' prints it). Host it at the URL printed on stderr,
over HTTPS with a certificate for the domain; a verifier caches it for the
response's Cache-Control max-age (1 min to 1 h, 5 min without).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := did.Parse(args[0])
			if err != nil {
				return usageErrorf("%w", err)
			}
			keys, err := orgDocKeys(cmd)
			if err != nil {
				return err
			}
			doc, err := did.NewDocument(args[0], keys)
			if err != nil {
				return usageErrorf("%w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "host this document at %s (HTTPS, Content-Type application/did+json or application/json)\n", id.URL())
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", doc)
			return err
		},
	}
	cmd.Flags().StringArray("node", nil, "the did:key of another node of the organisation (repeatable)")
	cmd.Flags().Bool("no-self", false, "leave this node's key out")
	return cmd
}

// orgDocKeys are the keys org doc lists: this node's (unless --no-self)
// and each --node.
func orgDocKeys(cmd *cobra.Command) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	if noSelf, _ := cmd.Flags().GetBool("no-self"); !noSelf {
		home, err := homeDir(cmd)
		if err != nil {
			return nil, err
		}
		priv, err := homedir.LoadIdentity(home)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageErrorf("no identity in %s: run 'lmosnode init', or give --no-self and --node", home)
		}
		if err != nil {
			return nil, err
		}
		signing, err := homedir.SigningKey(priv)
		if err != nil {
			return nil, err
		}
		keys = append(keys, signing.Public().(ed25519.PublicKey))
	}
	nodes, _ := cmd.Flags().GetStringArray("node")
	for _, n := range nodes {
		pub, err := lmosproto.ParseDIDKey(n)
		if err != nil {
			return nil, usageErrorf("--node: %w", err)
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return nil, usageErrorf("no key to list: give --node")
	}
	return keys, nil
}

func newOrgSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set DID",
		Short: "Bind this node to the organisation DID (config setting organization; \"\" unbinds)",
		Long: `set writes DID into the "organization" setting of config.json. From the
next start every TD the node publishes claims it (its Things published
before are republished with the claim). Other nodes show the organisation
once its DID document lists this node's key ('lmosnode org doc').`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			cfg, err := loadFileOrDefault(home)
			if err != nil {
				return err
			}
			cfg.Organization = args[0]
			if err := cfg.Validate(); err != nil {
				return usageErrorf("%w (config.json unchanged)", err)
			}
			if err := config.Write(home, cfg); err != nil {
				return err
			}
			if args[0] != "" {
				id, _ := did.Parse(args[0]) // validated above
				fmt.Fprintf(cmd.ErrOrStderr(), "bound to %s; its document must be at %s and list this node's key; restart the node\n", args[0], id.URL())
			}
			return nil
		},
	}
}

// orgBinding is what org show prints.
type orgBinding struct {
	Organization string `json:"organization"`
	Domain       string `json:"domain,omitempty"`
	Document     string `json:"document,omitempty"`
}

func newOrgShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show the organisation this node is bound to and where its document lives",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfigFor(cmd)
			if err != nil {
				return err
			}
			b := orgBinding{Organization: cfg.Organization}
			if cfg.Organization != "" {
				id, err := did.Parse(cfg.Organization)
				if err != nil {
					return err
				}
				b.Domain, b.Document = id.Domain(), id.URL()
			}
			return output(cmd, b, func(b orgBinding) error {
				if b.Organization == "" {
					_, err := fmt.Fprintln(cmd.OutOrStdout(), "not bound to an organisation ('lmosnode org set DID')")
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "organization  %s\ndomain        %s\ndocument      %s\n", b.Organization, b.Domain, b.Document)
				return err
			})
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	cmd.Flags().Bool("file", false, "config.json over the defaults, without the environment")
	return cmd
}
