package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/trust"
	"github.com/lmosnode/lmosnode/node/trust/trustapi"
)

func newTrustCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Show and change which publishers this node trusts",
		Long: `trust shows and changes the running node's trust list: publishers it
allows, prefers and denies. The change applies at once and is written to
the "trust" member of config.json.

  allow   the publisher is marked trusted; with "onlyTrusted": true in
          config.json only trusted publishers' records are taken
  prefer  trusted, and it wins: when several publishers have a Thing of one
          id, the node resolves and calls the preferred one, and find lists
          it first
  deny    the publisher's records are dropped (those held now too), not
          relayed to other nodes, not resolved and not called

A PUBLISHER is a peer ID, a did:key, or the short form that 'lmosnode find'
prints in its PUBLISHER column (…zRfVBq6e): the end of the peer ID of a
publisher whose Things the node holds. It may also name an organisation,
by DID (did:web:example.com, did:wba:…) or by domain (example.com): the
level applies to every publisher whose TDs claim the organisation and whose
key the organisation's DID document lists (docs/identity.md). Changing the list needs the node's
API token, which the CLI reads from the home.`,
		Example: `  lmosnode trust ls
  lmosnode trust add prefer …zRfVBq6e
  lmosnode trust add deny 12D3KooWJxLWSBaxuTCffiZvh7MV5Ht8m5rgEeq9vr6YMGoxzLF1
  lmosnode trust add allow example.com
  lmosnode trust rm …zRfVBq6e`,
	}
	cmd.AddCommand(newTrustLsCmd(), newTrustAddCmd(), newTrustRmCmd())
	return cmd
}

func newTrustLsCmd() *cobra.Command {
	return trustCmd(&cobra.Command{
		Use:   "ls",
		Short: "List the trust list",
		Args:  cobra.NoArgs,
	}, func(ctx context.Context, api *apiclient.Client, _ []string) (trustapi.List, error) {
		return api.Trust(ctx)
	})
}

func newTrustAddCmd() *cobra.Command {
	return trustCmd(&cobra.Command{
		Use:       "add allow|prefer|deny PUBLISHER",
		Short:     "Put a publisher on the trust list (or move it to another level)",
		Args:      cobra.ExactArgs(2),
		ValidArgs: []string{string(trust.Allow), string(trust.Prefer), string(trust.Deny)},
	}, func(ctx context.Context, api *apiclient.Client, args []string) (trustapi.List, error) {
		level, err := trust.ParseLevel(args[0])
		if err != nil {
			return trustapi.List{}, err
		}
		return api.SetTrust(ctx, args[1], level)
	})
}

func newTrustRmCmd() *cobra.Command {
	return trustCmd(&cobra.Command{
		Use:   "rm PUBLISHER",
		Short: "Take a publisher off the trust list",
		Args:  cobra.ExactArgs(1),
	}, func(ctx context.Context, api *apiclient.Client, args []string) (trustapi.List, error) {
		return api.RemoveTrust(ctx, args[0])
	})
}

// trustCmd completes cmd: it runs call against the running node and
// prints the trust list it returns.
func trustCmd(cmd *cobra.Command, call func(context.Context, *apiclient.Client, []string) (trustapi.List, error)) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return query(cmd, func(ctx context.Context, api *apiclient.Client) (trustapi.List, error) {
			l, err := call(ctx, api, args)
			if err == nil && l.Dropped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "dropped %d records of the denied publisher\n", l.Dropped)
			}
			return l, err
		}, func(l trustapi.List) error { return printTrust(cmd, l) })
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

// printTrust prints the trust list l as a table.
func printTrust(cmd *cobra.Command, l trustapi.List) error {
	err := table(cmd, "LEVEL\tSHORT\tPUBLISHER", l.Entries, "the trust list is empty: every publisher is unknown", func(e trustapi.Entry) []string {
		if e.Organization != "" {
			return []string{e.Level, "org", e.Organization}
		}
		return []string{e.Level, e.Short, e.Publisher}
	})
	if err == nil && len(l.Entries) > 0 && l.OnlyTrusted {
		fmt.Fprintln(cmd.OutOrStdout(), "(onlyTrusted: records of unlisted publishers are not taken)")
	}
	return err
}
