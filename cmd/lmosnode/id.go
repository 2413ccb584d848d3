package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/homedir"
)

func newIDCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "id",
		Short: "Print the node's peer ID and did:key",
		Long: `id prints the node's libp2p peer ID and its did:key (both name the same
Ed25519 key). If the daemon is running (or --api names a node) it is asked,
and its addresses and API URL are printed too; otherwise the identity key
file of the home is read. --json prints the same as the API's
GET /api/v1/node (only peerID and didKey from the key file).`,
		Example: `  lmosnode id
  lmosnode id --home /var/lib/lmosnode
  lmosnode id --api http://node.example.org:5080 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			info, err := daemonInfo(cmd)
			if err == nil {
				return output(cmd, info, func(info api.NodeInfo) error {
					printInfo(out, info)
					return nil
				})
			}
			if remoteTarget(cmd) {
				return err // a node named by --api must answer
			}
			// no node, or one that refuses us: the home's key names it
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			key, err := homedir.LoadIdentity(home)
			if errors.Is(err, fs.ErrNotExist) {
				return notFound(fmt.Errorf("%w (run 'lmosnode init' or 'lmosnode up' first)", err))
			}
			if err != nil {
				return err
			}
			id, did, err := identityNames(key.GetPublic())
			if err != nil {
				return err
			}
			return output(cmd, api.NodeInfo{PeerID: id.String(), DIDKey: did}, func(api.NodeInfo) error {
				fmt.Fprintf(out, "peer ID: %s\ndid:key: %s\n", id, did)
				return nil
			})
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

// remoteTarget reports whether --api or $LMOS_API names the node.
func remoteTarget(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("api")
	return (f != nil && f.Changed && f.Value.String() != "") || os.Getenv(APIEnv) != ""
}

// daemonInfo asks the node the command talks to for its node info, within
// a few seconds (id falls back to the key file); the error is unavailable
// (exit 5) when no node runs or answers.
func daemonInfo(cmd *cobra.Command) (info api.NodeInfo, err error) {
	err = callDaemon(cmd, 3*time.Second, func(ctx context.Context, d *daemon) error {
		info, err = d.api.Node(ctx)
		return err
	})
	return info, err
}

// identityNames are the peer ID and did:key of a node's public key.
func identityNames(pub crypto.PubKey) (peer.ID, string, error) {
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		return "", "", err
	}
	did, err := homedir.DIDKeyOf(pub)
	if err != nil {
		return "", "", err
	}
	return id, did, nil
}

func printIdentity(w io.Writer, pub crypto.PubKey) error {
	id, did, err := identityNames(pub)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "peer ID: %s\ndid:key: %s\n", id, did)
	return nil
}

func printInfo(w io.Writer, info api.NodeInfo) {
	fmt.Fprintf(w, "peer ID: %s\ndid:key: %s\n", info.PeerID, info.DIDKey)
	for _, a := range info.Addrs {
		fmt.Fprintf(w, "address: %s\n", a)
	}
	fmt.Fprintf(w, "API:     %s\n", info.APIURL)
	if info.Reachability != "" {
		fmt.Fprintf(w, "reachability: %s\n", info.Reachability)
	}
	if info.Role != "" {
		fmt.Fprintf(w, "role:    %s\n", info.Role)
	}
	for _, r := range info.Relays {
		fmt.Fprintf(w, "relay:   %s\n", r)
	}
}
