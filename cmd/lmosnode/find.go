package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
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
that signed it, in its short form (…zRfVBq6e, the end of its peer ID),
which --publisher and 'lmosnode trust' take back ("self" for this node,
"UNVERIFIED" if the proof does not verify). TRUST is the publisher's mark
in the node's trust list: own, trusted, denied or unknown; the node lists
preferred, then allowed publishers first (see 'lmosnode trust'). GROUPS are the groups a Thing is restricted to (lmos:groups), by
name where this node knows them, "-" for a public Thing. ONLINE says
whether the publisher was seen recently (presence beats, republications, a
connection; "yes" always for this node's own Things); online Things are
listed first after the trust ranking, and --online lists only them. --json
prints the signed TDs as served.

When nothing matches, find says so on stderr (--json prints []) and exits 3,
like any "not found", so that a script can tell an empty result from a
listing.`,
		Example: `  lmosnode find weather
  lmosnode find --type agent --capability weather-forecast@^1.2
  lmosnode find --vendor "Example Maps AG" --type tool
  lmosnode find --publisher …zRfVBq6e --json
  lmosnode find --online --capability geocode`,
		RunE: runFind,
	}
	f := cmd.Flags()
	f.String("type", "", "agent, tool, or any @type")
	f.String("capability", "", "capability id, optionally @ a semantic version range (weather-forecast@^1.2)")
	f.String("vendor", "", "vendor name (lmos:vendor), case-insensitive")
	f.String("publisher", "", "publisher: peer ID, did:key or the short form find prints (…zRfVBq6e)")
	f.String("group", "", "group id (lmos:groups)")
	f.Bool("online", false, "only Things whose publisher is online")
	f.Int("limit", 50, "at most this many results")
	f.Int("offset", 0, "skip this many results")
	f.String("cursor", "", "continue after the page that printed this cursor (\"more results: --cursor …\")")
	f.Bool("json", false, "print the signed TDs as a JSON array")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"agent", "tool"}, cobra.ShellCompDirectiveNoFileComp))
	for _, name := range []string{"capability", "vendor", "publisher", "group", "limit", "offset", "cursor"} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	return cmd
}

func runFind(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	var q apiclient.FindQuery
	q.Type, _ = f.GetString("type")
	q.Capability, _ = f.GetString("capability")
	q.Vendor, _ = f.GetString("vendor")
	q.Publisher, _ = f.GetString("publisher")
	q.Group, _ = f.GetString("group")
	q.Online, _ = f.GetBool("online")
	q.Limit, _ = f.GetInt("limit")
	q.Offset, _ = f.GetInt("offset")
	q.Cursor, _ = f.GetString("cursor")
	q.Text = strings.Join(args, " ")
	if q.Limit < 1 {
		return usageErrorf("--limit: %d: want at least 1", q.Limit)
	}
	if q.Offset < 0 {
		return usageErrorf("--offset: %d is negative", q.Offset)
	}
	return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
		res, err := d.api.Find(ctx, q)
		if err != nil {
			return err
		}
		// --json prints the signed TDs as served ([] for none).
		raws := make([]json.RawMessage, len(res.Things))
		for i, t := range res.Things {
			raws[i] = t.Raw
		}
		err = output(cmd, raws, func([]json.RawMessage) error {
			if len(res.Things) == 0 {
				return nil
			}
			return printFound(ctx, cmd, d, res, q.Offset)
		})
		if err == nil && len(res.Things) == 0 {
			return notFound(errors.New("no matching Things"))
		}
		return err
	})
}

// printFound prints the page res of find (at offset) as a table.
func printFound(ctx context.Context, cmd *cobra.Command, d *daemon, res apiclient.FindResult, offset int) error {
	// Mark the node's own Things; without node info every publisher is
	// shown by its peer ID.
	var self peer.ID
	if info, err := d.api.Node(ctx); err == nil {
		self, _ = peer.Decode(info.PeerID)
	}
	names := groupNames(ctx, d)
	marks := trustMarks(ctx, d)
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TITLE\tTYPE\tCAPABILITIES\tVENDOR\tGROUPS\tORGANIZATION\tPUBLISHER\tTRUST\tONLINE\tID")
	for _, t := range res.Things {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(t.TD.Title), typeName(t.TD), capabilities(t.TD),
			cell(t.TD.Vendor()), groupList(t.TD.Groups, names), organizationCell(t), publisherName(t, self), trustMark(t, self, marks), yesNo(t.Online), t.TD.ID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case res.Next != "":
		fmt.Fprintf(cmd.ErrOrStderr(), "more results: --cursor %s\n", res.Next)
	case res.More:
		fmt.Fprintf(cmd.ErrOrStderr(), "more results: --offset %d\n", offset+len(res.Things))
	}
	return nil
}

// publisherName is the short name of a result's verified signer.
func publisherName(t apiclient.Found, self peer.ID) string {
	switch t.Publisher {
	case "":
		return "UNVERIFIED"
	case self:
		return "self"
	}
	return lmosproto.ShortPublisher(t.Publisher)
}

// organizationCell is the ORGANIZATION cell of a result: the domain of
// the organisation its TD claims when the node verified the claim,
// "unverified DID (pending|unverified)" otherwise, "-" without a claim.
func organizationCell(t apiclient.Found) string {
	claim := t.TD.Organization()
	if claim == "" || t.Publisher == "" {
		return "-"
	}
	if t.Organization == did.StatusVerified {
		if id, err := did.Parse(claim); err == nil {
			return id.Domain()
		}
	}
	status := t.Organization
	if status == "" || status == did.StatusVerified {
		status = "not checked"
	}
	return "unverified " + claim + " (" + status + ")"
}

// trustMarks returns the marks of the node's trust list by peer ID; nil
// if the node does not answer (every publisher then shows unknown).
func trustMarks(ctx context.Context, d *daemon) map[string]trust.Mark {
	l, err := d.api.Trust(ctx)
	if err != nil {
		return nil
	}
	return l.Marks()
}

// trustMark is the TRUST cell of a result.
func trustMark(t apiclient.Found, self peer.ID, marks map[string]trust.Mark) string {
	switch t.Publisher {
	case "":
		return "-"
	case self:
		return string(trust.Own)
	}
	if t.Trust != "" {
		return t.Trust
	}
	if m, ok := marks[t.Publisher.String()]; ok {
		return string(m)
	}
	return string(trust.Unknown)
}

// groupNames maps the IDs of the groups the node knows to their names;
// empty if the node has no group API.
func groupNames(ctx context.Context, d *daemon) map[string]string {
	gs, err := d.api.Groups(ctx)
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

// resolvePublisher turns the --publisher value of a call into what the
// HTTP binding takes, a peer ID or did:key: the short form find prints
// ("…zRfVBq6e") is resolved by the node's directory API, which knows the
// publishers it holds (and refuses an unknown or ambiguous one).
func resolvePublisher(ctx context.Context, d *daemon, s string) (string, error) {
	if _, err := lmosproto.ParsePublisher(s); err == nil {
		return s, nil
	}
	res, err := d.api.Find(ctx, apiclient.FindQuery{Publisher: s, Limit: 1})
	if err != nil {
		return "", err
	}
	if len(res.Things) == 0 {
		return "", notFound(fmt.Errorf("--publisher %s: this node holds no Thing of that publisher", s))
	}
	return res.Things[0].Publisher.String(), nil
}
