package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/tdd"
)

func newPeersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "peers",
		Short: "List the peers this node knows",
		Long: `peers lists the connected peers of the running node: their state
(connected, or limited when only relayed connections with limits are open),
who opened the connections (DIR: in, out or both), whether they are DIRECT
or RELAYED, the measured round-trip time, the agent the peer runs, how the
node learned of it (mdns, dht, bootstrap, connect, inbound, outbound) and
its distinct addresses. --json prints the API's objects.`,
		Example: `  lmosnode peers
  lmosnode peers --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return query(cmd, func(ctx context.Context, api *apiclient.Client) ([]tdd.Peer, error) {
				return api.Peers(ctx)
			}, func(peers []tdd.Peer) error { return printPeers(cmd, peers) })
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

// printPeers prints the table of peers.
func printPeers(cmd *cobra.Command, peers []tdd.Peer) error {
	return table(cmd, "PEER ID\tSTATE\tDIR\tLINK\tLATENCY\tAGENT\tSOURCE\tADDRESSES", peers, "no peers yet: see 'lmosnode connect'", func(p tdd.Peer) []string {
		addrs := strings.Join(p.Addrs, ",")
		if addrs == "" {
			addrs = "-"
		}
		link, latency := "direct", "-"
		if p.Relayed {
			link = "relayed"
		}
		if p.LatencyMS > 0 {
			latency = fmt.Sprintf("%.1fms", p.LatencyMS)
		}
		return []string{p.PeerID, cell(p.State), cell(strings.TrimSuffix(p.Direction, "bound")), link, latency, cell(p.AgentVersion), cell(p.Source), addrs}
	})
}

func newConnectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "connect MULTIADDR",
		Short: "Connect this node to a peer",
		Long: `connect asks the running node to dial the peer at MULTIADDR, which ends in
/p2p/<peer ID> (the addresses 'lmosnode id' prints on the other node).
--json prints the peer as the API answers it.`,
		Example: `  lmosnode connect /ip4/192.0.2.7/tcp/4001/p2p/12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA`,
		Args:    cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return query(cmd, func(ctx context.Context, api *apiclient.Client) (tdd.Peer, error) {
				return api.Connect(ctx, args[0])
			}, func(p tdd.Peer) error {
				fmt.Fprintf(cmd.OutOrStdout(), "connected to %s\n", p.PeerID)
				return nil
			})
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}
