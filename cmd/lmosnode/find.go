package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/tdd"
)

func newFindCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "find [TEXT...]",
		Short: "Find agents and tools in the federation",
		Long: `find searches the running node's directory: its own Things and the Things
it learned from the federation. Filters combine; TEXT is free text over
titles, descriptions and capabilities, and ranks the results. A capability
that no known Thing offers is looked up in the DHT.

Each result's signature is verified here; the PUBLISHER column is the peer
that signed it ("self" for this node, "UNVERIFIED" if the proof does not
verify), abbreviated to the end of its peer ID ("…zRfVBq6e"), which
--publisher takes as well as a full peer ID or did:key. GROUPS are the groups a Thing is restricted to (lmos:groups), by
name where this node knows them, "-" for a public Thing. --json prints the
signed TDs as served.

When nothing matches, find says so on stderr (--json prints []) and exits 3,
like any "not found", so that a script can tell an empty result from a
listing.`,
		Example: `  lmosnode find weather
  lmosnode find --type agent --capability weather-forecast@^1.2
  lmosnode find --vendor "Example Maps AG" --type tool
  lmosnode find --publisher 12D3KooW... --json`,
		RunE: runFind,
	}
	f := cmd.Flags()
	f.String("type", "", "agent, tool, or any @type")
	f.String("capability", "", "capability id, optionally @ a semantic version range (weather-forecast@^1.2)")
	f.String("vendor", "", "vendor name (lmos:vendor), case-insensitive")
	f.String("publisher", "", "publisher peer ID, did:key, or the …XXXXXXXX form the PUBLISHER column shows")
	f.String("group", "", "group id (lmos:groups)")
	f.Int("limit", 50, "at most this many results")
	f.Int("offset", 0, "skip this many results")
	f.Bool("json", false, "print the signed TDs as a JSON array")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"agent", "tool"}, cobra.ShellCompDirectiveNoFileComp))
	for _, name := range []string{"capability", "vendor", "publisher", "group", "limit", "offset"} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	return cmd
}

func runFind(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	var q tdd.FindQuery
	q.Type, _ = f.GetString("type")
	q.Capability, _ = f.GetString("capability")
	q.Vendor, _ = f.GetString("vendor")
	q.Publisher, _ = f.GetString("publisher")
	q.Group, _ = f.GetString("group")
	q.Limit, _ = f.GetInt("limit")
	q.Offset, _ = f.GetInt("offset")
	q.Text = strings.Join(args, " ")
	if q.Limit < 1 {
		return usageErrorf("--limit: %d: want at least 1", q.Limit)
	}
	if q.Offset < 0 {
		return usageErrorf("--offset: %d is negative", q.Offset)
	}
	d, err := connectDaemon(cmd)
	if err != nil {
		return err
	}
	ctx, cancel := d.ctx(cmd)
	defer cancel()
	if q.Publisher != "" {
		if q.Publisher, err = resolvePublisher(ctx, d, q.Publisher); err != nil {
			return err
		}
	}
	res, err := d.client.Find(ctx, q)
	if err != nil {
		return d.explain(err)
	}
	out := cmd.OutOrStdout()
	if asJSON, _ := f.GetBool("json"); asJSON {
		raws := make([]json.RawMessage, len(res.Things))
		for i, t := range res.Things {
			raws[i] = t.Raw
		}
		if err := printJSON(out, raws); err != nil {
			return err
		}
		if len(raws) == 0 {
			return notFound(errors.New("no matching Things"))
		}
		return nil
	}
	if len(res.Things) == 0 {
		return notFound(errors.New("no matching Things"))
	}
	// Mark the node's own Things; without node info every publisher is
	// shown by its peer ID.
	var self peer.ID
	if info, err := node.FetchNodeInfo(ctx, d.http, d.apiURL); err == nil {
		self, _ = peer.Decode(info.PeerID)
	}
	names := groupNames(ctx, d)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TITLE\tTYPE\tCAPABILITIES\tVENDOR\tGROUPS\tPUBLISHER\tID")
	for _, t := range res.Things {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(t.TD.Title), typeName(t.TD), capabilities(t.TD),
			cell(t.TD.Vendor()), groupList(t.TD.Groups, names), publisherName(t, self), t.TD.ID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.More {
		fmt.Fprintf(cmd.ErrOrStderr(), "more results: --offset %d\n", q.Offset+len(res.Things))
	}
	return nil
}

// publisherName is the short name of a result's verified signer.
func publisherName(t tdd.Found, self peer.ID) string {
	switch t.Publisher {
	case "":
		return "UNVERIFIED"
	case self:
		return "self"
	}
	return shortPeerID(t.Publisher.String())
}

// resolvePublisher turns the --publisher value into what the API takes:
// a peer ID or did:key as given, or the short form find prints
// ("…zRfVBq6e", also "...zRfVBq6e") into the one publisher of a Thing
// the node knows whose peer ID ends so.
func resolvePublisher(ctx context.Context, d *daemon, s string) (string, error) {
	suffix, short := strings.CutPrefix(s, "…")
	if !short {
		suffix, short = strings.CutPrefix(s, "...")
	}
	if !short {
		return s, nil
	}
	if suffix == "" {
		return "", usageErrorf("--publisher %q: nothing after the ellipsis", s)
	}
	var matches []string
	for offset := 0; ; offset += listPage {
		res, err := d.client.Find(ctx, tdd.FindQuery{Offset: offset, Limit: listPage})
		if err != nil {
			return "", d.explain(err)
		}
		for _, f := range res.Things {
			if id := f.Publisher.String(); f.Publisher != "" && strings.HasSuffix(id, suffix) && !slices.Contains(matches, id) {
				matches = append(matches, id)
			}
		}
		if !res.More || len(res.Things) == 0 {
			break
		}
	}
	switch len(matches) {
	case 0:
		return "", notFound(fmt.Errorf("--publisher %s: no publisher of a Thing this node knows has a peer ID ending in %q", s, suffix))
	case 1:
		return matches[0], nil
	}
	return "", usageErrorf("--publisher %s: %d publishers end so, give more of the peer ID: %s", s, len(matches), strings.Join(matches, ", "))
}

// shortPeerID abbreviates a peer ID to its last characters: Ed25519 peer
// IDs all start with 12D3KooW, so the end tells them apart. --publisher
// takes the abbreviation back (resolvePublisher).
func shortPeerID(id string) string {
	const keep = 8
	if len(id) <= keep+1 {
		return id
	}
	return "…" + id[len(id)-keep:]
}

// groupNames maps the IDs of the groups the node knows to their names;
// empty if the node has no group API.
func groupNames(ctx context.Context, d *daemon) map[string]string {
	gs, err := d.groups.List(ctx)
	if err != nil {
		return nil
	}
	names := make(map[string]string, len(gs))
	for _, g := range gs {
		names[g.ID] = g.Name
	}
	return names
}

// groupList is the GROUPS cell of a Thing restricted to groups: each by
// its name when known (and unique among them), else its ID; "-" if public.
func groupList(groups []string, names map[string]string) string {
	if len(groups) == 0 {
		return "-"
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = g
		if n := names[g]; n != "" && count[n] == 1 && !strings.ContainsAny(n, ", \t") {
			parts[i] = n
		}
	}
	return strings.Join(parts, ",")
}
