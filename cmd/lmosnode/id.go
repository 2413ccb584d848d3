package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/httpapi"
)

func newIDCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "id",
		Short: "Print the node's peer ID and did:key",
		Long: `id prints the node's libp2p peer ID and its did:key (both name the same
Ed25519 key). If the daemon is running it is asked, and its addresses and
API URL are printed too; otherwise the identity key file is read.`,
		Example: `  lmosnode id
  lmosnode id --home /var/lib/lmosnode`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if info, err := daemonInfo(cmd.Context(), home); err == nil {
				printInfo(out, info)
				return nil
			}
			key, err := node.LoadIdentity(home)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w (run 'lmosnode init' or 'lmosnode up' first)", err)
			}
			if err != nil {
				return err
			}
			return printIdentity(out, key.GetPublic())
		},
	}
}

// daemonInfo asks the daemon whose api file is in home for its node info.
func daemonInfo(ctx context.Context, home string) (node.NodeInfo, error) {
	apiURL, err := node.ReadAPIFile(home)
	if err != nil {
		return node.NodeInfo{}, err
	}
	token, err := node.LoadAPIToken(home)
	if err != nil {
		return node.NodeInfo{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return node.FetchNodeInfo(ctx, httpapi.BearerClient(token), apiURL)
}

func printIdentity(w io.Writer, pub crypto.PubKey) error {
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		return err
	}
	did, err := node.DIDKeyOf(pub)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "peer ID: %s\ndid:key: %s\n", id, did)
	return nil
}

func printInfo(w io.Writer, info node.NodeInfo) {
	fmt.Fprintf(w, "peer ID: %s\ndid:key: %s\n", info.PeerID, info.DIDKey)
	for _, a := range info.Addrs {
		fmt.Fprintf(w, "address: %s\n", a)
	}
	fmt.Fprintf(w, "API:     %s\n", info.APIURL)
	if info.Reachability != "" {
		fmt.Fprintf(w, "reachability: %s\n", info.Reachability)
	}
	for _, r := range info.Relays {
		fmt.Fprintf(w, "relay:   %s\n", r)
	}
}
