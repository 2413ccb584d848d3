package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The group commands are thin clients of the node's group API
// (docs/groups.md, "HTTP API"), through apiclient.Client.

func newGroupCmd() *cobra.Command {
	group := &cobra.Command{
		Use:   "group",
		Short: "Create, join and manage signed agent groups",
		Long: `group manages the signed agent groups of the running node: sets of peers
that agree on who belongs, without a central registry. A Thing whose TD
names a group in lmos:groups is visible to and callable by its members only.

GROUP is a group ID or an unambiguous name among this node's groups.
See docs/groups.md.`,
		Example: `  lmosnode group create diagnostics
  lmosnode group invite diagnostics --for 12D3KooW…
  lmosnode group join lmosgroup:eyJ0eXBlIjoi…
  lmosnode group show diagnostics`,
	}
	group.AddCommand(
		newGroupCreateCmd(),
		newGroupInviteCmd(),
		newGroupJoinCmd(),
		newGroupInvitesCmd(),
		newGroupRevokeInviteCmd(),
		newGroupLsCmd(),
		newGroupShowCmd(),
		newGroupRemoveCmd(),
		newGroupAdminCmd(),
		newGroupRenameCmd(),
		newGroupLeaveCmd(),
		newGroupDissolveCmd(),
		newGroupPublishCmd(),
		newGroupSubscribeCmd(),
	)
	return group
}

// resolveGroup turns a GROUP argument into a group ID: an ID the node
// knows, else the one group of this node with that name (groups this node
// belongs to first). Anything else that looks like an ID is passed on, so
// that the node answers for it.
func resolveGroup(ctx context.Context, d *daemon, arg string) (string, error) {
	if arg == "" {
		return "", errors.New("GROUP: empty")
	}
	gs, err := d.api.Groups(ctx)
	if err != nil {
		return "", err
	}
	var named, mine []groupapi.GroupInfo
	for _, g := range gs {
		if g.ID == arg {
			return g.ID, nil
		}
		if g.Name == arg {
			named = append(named, g)
			if g.Self.Member {
				mine = append(mine, g)
			}
		}
	}
	if len(mine) == 1 {
		return mine[0].ID, nil
	}
	if len(named) == 1 {
		return named[0].ID, nil
	}
	if len(named) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d groups are named %q; give the ID:", len(named), arg)
		for _, g := range named {
			state := "member"
			switch {
			case g.Dissolved:
				state = "dissolved"
			case !g.Self.Member:
				state = "not a member"
			}
			fmt.Fprintf(&b, "\n  %s  (%d members, %s)", g.ID, len(g.Members), state)
		}
		return "", errors.New(b.String())
	}
	if looksLikeGroupID(arg) {
		return arg, nil
	}
	return "", notFound(fmt.Errorf("no group named %q on this node (see 'lmosnode group ls')", arg))
}

// looksLikeGroupID reports whether s has the form of a group ID: "b" and
// base32 (the CID form of the genesis operation).
func looksLikeGroupID(s string) bool {
	if len(s) < 32 || s[0] != 'b' {
		return false
	}
	for _, c := range s[1:] {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// parsePeerArg checks a PEER argument.
func parsePeerArg(s string) (peer.ID, error) {
	id, err := peer.Decode(s)
	if err != nil {
		return "", fmt.Errorf("PEER %q is not a peer ID: %w", s, err)
	}
	return id, nil
}

// groupCommand runs fn, one request to the daemon, with the resolved ID
// of the GROUP argument arg.
func groupCommand(cmd *cobra.Command, arg string, fn func(ctx context.Context, d *daemon, id string) error) error {
	return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
		id, err := resolveGroup(ctx, d, arg)
		if err != nil {
			return err
		}
		return fn(ctx, d, id)
	})
}

// printGroupResult prints the GroupInfo a change answers with: --json as
// is, else its groupLine.
func printGroupResult(cmd *cobra.Command, verb string, g groupapi.GroupInfo) error {
	return output(cmd, g, groupLine(cmd, verb))
}

// groupLine prints a GroupInfo a change answers with as one line.
func groupLine(cmd *cobra.Command, verb string) func(groupapi.GroupInfo) error {
	return func(g groupapi.GroupInfo) error {
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s group %s (%s): %d member(s)%s\n", verb, cell(g.Name), g.ID, len(g.Members), dissolvedNote(g))
		return err
	}
}

func dissolvedNote(g groupapi.GroupInfo) string {
	if g.Dissolved {
		return ", dissolved"
	}
	return ""
}

// changeCmd builds the commands that make one change and answer with the
// group: remove, rename, leave, dissolve.
func changeCmd(use, short, long, example string, args cobra.PositionalArgs,
	do func(ctx context.Context, c *apiclient.Client, id string, args []string) (groupapi.GroupInfo, error), verb string) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				g, err := do(ctx, d.api, id, args)
				if err != nil {
					return err
				}
				return printGroupResult(cmd, verb, g)
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the group as the API returns it")
	return cmd
}

func newGroupCreateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Found a new group, with this node as its admin",
		Long: `create signs the genesis of a new group with this node's key: the node is
its founder and first admin. The group ID is derived from the genesis.`,
		Example: `  lmosnode group create diagnostics
  lmosnode group create ops --post-role admin --max-members 10`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var pol groups.Policy
			pol.PostRole, _ = cmd.Flags().GetString("post-role")
			pol.MaxMembers, _ = cmd.Flags().GetInt("max-members")
			if pol.PostRole != "" && pol.PostRole != groups.RoleMember && pol.PostRole != groups.RoleAdmin {
				return fmt.Errorf("--post-role: %q: want member or admin", pol.PostRole)
			}
			if pol.MaxMembers < 0 {
				return fmt.Errorf("--max-members: %d is negative", pol.MaxMembers)
			}
			var policy *groups.Policy
			if pol != (groups.Policy{}) {
				policy = &pol
			}
			return query(cmd, func(ctx context.Context, api *apiclient.Client) (groupapi.GroupInfo, error) {
				return api.CreateGroup(ctx, args[0], policy)
			}, groupLine(cmd, "created"))
		},
	}
	cmd.Flags().String("post-role", "", "who may post on the group topic: member (default) or admin")
	cmd.Flags().Int("max-members", 0, "member cap (0: none)")
	cmd.Flags().Bool("json", false, "print the group as the API returns it")
	return cmd
}

func newGroupInviteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invite GROUP",
		Short: "Make an invitation token to hand out",
		Long: `invite makes a signed invitation token (lmosgroup:…) for GROUP; this node
must be one of its admins. Hand the token out of band; its holder joins
with 'lmosnode group join TOKEN'. The token is printed alone on stdout,
its ID and expiry on stderr.

By default a token admits one peer (--uses), within an hour (--ttl); with
--for only that peer. The token holds a secret that only its holder and
the admins' nodes it asks to join see: the group's public log records a
hash of it, never the token. 'lmosnode group invites' lists the
outstanding invitations, 'lmosnode group revoke-invite' revokes one.`,
		Example: `  lmosnode group invite diagnostics --for 12D3KooW…
  lmosnode group invite diagnostics --uses 5 --ttl 24h --thing urn:example:diagnostics`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			var o groupsvc.InviteOptions
			if s, _ := f.GetString("for"); s != "" {
				p, err := parsePeerArg(s)
				if err != nil {
					return fmt.Errorf("--for: %w", err)
				}
				o.For = p
			}
			if f.Changed("ttl") {
				o.TTL, _ = f.GetDuration("ttl")
				if o.TTL <= 0 {
					return fmt.Errorf("--ttl: %s: want a positive duration", o.TTL)
				}
			}
			switch uses, _ := f.GetInt("uses"); {
			case !f.Changed("uses"): // the node's default: 1
			case uses == 0:
				o.Uses = groupsvc.UnlimitedUses
			case uses > 0:
				o.Uses = uses
			default:
				return fmt.Errorf("--uses: %d: want a positive count, or 0 for no limit", uses)
			}
			o.Role, _ = f.GetString("role")
			o.Things, _ = f.GetStringArray("thing")
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				inv, err := d.api.Invite(ctx, id, o)
				if err != nil {
					return err
				}
				return output(cmd, inv, func(inv groupapi.Invitation) error {
					if !strings.HasPrefix(inv.Token, groups.InvitePrefix) {
						return fmt.Errorf("the node answered a token without the %s prefix: %q", groups.InvitePrefix, inv.Token)
					}
					fmt.Fprintln(cmd.OutOrStdout(), inv.Token)
					if !inv.Expires.IsZero() {
						fmt.Fprintf(cmd.ErrOrStderr(), "invitation %s, expires %s\n", inv.ID, timeText(inv.Expires))
					}
					return nil
				})
			})
		},
	}
	f := cmd.Flags()
	f.String("for", "", "only this peer may join with the token")
	f.Duration("ttl", groupsvc.DefaultInviteTTL, "how long the token is valid")
	f.Int("uses", 1, "how many peers may join with the token (0: any number until it expires)")
	f.String("role", "", "the role of the joining member (default member)")
	f.StringArray("thing", nil, "restrict the member to this Thing of the group (repeatable)")
	f.Bool("json", false, "print the token and its expiry as JSON")
	return cmd
}

// joinPoll is how often join --wait asks whether a pending join went
// through.
const joinPoll = time.Second

func newGroupJoinCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "join TOKEN",
		Short: "Join a group with an invitation token",
		Long: `join hands the invitation token to the running node, which asks an admin's
node to add it. If no admin is reachable the join stays pending: the node
retries (across restarts) until an admin answers or the token expires.
--wait waits for that, until the token expires (or Ctrl-C).`,
		Example: `  lmosnode group join lmosgroup:eyJ0eXBlIjoi…
  lmosnode group join "$(cat token.txt)" --wait`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			token := strings.TrimSpace(args[0])
			// What the token says of itself, for the messages; the
			// node checks its expiry.
			inv, err := groups.ParseInvitation(token, time.Time{})
			if err != nil {
				return fmt.Errorf("TOKEN: %w", err)
			}
			return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
				res, err := d.api.Join(ctx, token)
				if err != nil {
					return err
				}
				if !res.Pending {
					return printGroupResult(cmd, "joined", *res.Info)
				}
				group := inv.Group
				if res.Group != "" {
					group = res.Group
				}
				if wait, _ := cmd.Flags().GetBool("wait"); !wait {
					return output(cmd, res, func(groupapi.JoinResult) error {
						fmt.Fprintf(cmd.OutOrStdout(), "join of group %s (%s) pending: no admin answered yet; the node keeps trying until %s\n",
							cell(inv.Name), group, expiresText(inv.Expires))
						return nil
					})
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "join of group %s (%s) pending; waiting for an admin (until %s)\n", cell(inv.Name), group, expiresText(inv.Expires))
				return waitJoined(cmd, d, group, inv.Expires)
			})
		},
	}
	cmd.Flags().Bool("wait", false, "wait until the join went through")
	cmd.Flags().Bool("json", false, "print the group (or the pending join) as the API returns it")
	return cmd
}

func expiresText(t time.Time) string {
	if t.IsZero() {
		return "the token expires"
	}
	return t.Local().Format(time.RFC3339)
}

// waitJoined polls the group until this node is a member, the token
// expired or the command is interrupted.
func waitJoined(cmd *cobra.Command, d *daemon, group string, expires time.Time) error {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx := parent
	if !expires.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(parent, expires)
		defer cancel()
	}
	t := time.NewTicker(joinPoll)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		g, err := d.api.Group(rctx, group)
		cancel()
		if err == nil && g.Self.Member {
			return printGroupResult(cmd, "joined", g)
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return parent.Err()
			}
			return fmt.Errorf("the invitation expired at %s before an admin added this node", expiresText(expires))
		case <-t.C:
		}
	}
}

func newGroupInvitesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invites GROUP",
		Short: "List the group's outstanding invitations",
		Long: `invites lists the invitations to GROUP this node knows that may still
admit a peer: those it issued, and those that add operations of the log
used (an unused invitation of another admin is known only to its node).
--all lists spent, revoked and expired ones too. USES is the limit (- for
none).`,
		Example: `  lmosnode group invites diagnostics
  lmosnode group invites diagnostics --all --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			all, _ := cmd.Flags().GetBool("all")
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				ins, err := d.api.Invitations(ctx, id, all)
				if err != nil {
					return err
				}
				return output(cmd, nonNil(ins), func(ins []groupapi.InvitationInfo) error {
					return printInvitations(cmd, ins)
				})
			})
		},
	}
	cmd.Flags().Bool("all", false, "also list spent, revoked and expired invitations")
	cmd.Flags().Bool("json", false, "print the invitations as the API returns them")
	return cmd
}

// printInvitations prints group invites' table.
func printInvitations(cmd *cobra.Command, ins []groupapi.InvitationInfo) error {
	return table(cmd, "ID\tSTATUS\tUSED\tUSES\tFOR\tROLE\tEXPIRES\tISSUER", ins, "no outstanding invitations: see 'lmosnode group invite'",
		func(in groupapi.InvitationInfo) []string {
			uses, forPeer := "-", "anyone"
			if in.Uses > 0 {
				uses = fmt.Sprint(in.Uses)
			}
			if in.For != "" {
				forPeer = in.For.String()
			}
			return []string{in.ID, in.Status, fmt.Sprint(in.Used), uses, forPeer, cell(in.Role), timeText(in.Expires), in.Issuer.String()}
		})
}

func newGroupRevokeInviteCmd() *cobra.Command {
	return changeCmd("revoke-invite GROUP ID", "Revoke an invitation (admins only)",
		`revoke-invite signs an uninvite operation for the invitation ID (as
'lmosnode group invite' and 'lmosnode group invites' show it); this node
must be an admin. Every node enforces it: no join with the invitation that
the revocation does not follow has effect. Members who joined with it
before stay (remove them with 'lmosnode group remove').`,
		`  lmosnode group revoke-invite diagnostics bafkrei…`, cobra.ExactArgs(2),
		func(ctx context.Context, c *apiclient.Client, id string, args []string) (groupapi.GroupInfo, error) {
			return c.RevokeInvitation(ctx, id, args[1])
		}, "revoked an invitation to")
}

func newGroupLsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the groups this node belongs to or knows",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return query(cmd, func(ctx context.Context, api *apiclient.Client) ([]groupapi.GroupInfo, error) {
				gs, err := api.Groups(ctx)
				return nonNil(gs), err
			}, func(gs []groupapi.GroupInfo) error {
				return table(cmd, "NAME\tMEMBERS\tSELF\tSTATE\tID", gs, "no groups yet: see 'lmosnode group create' and 'lmosnode group join'",
					func(g groupapi.GroupInfo) []string {
						return []string{cell(g.Name), fmt.Sprint(len(g.Members)), selfRole(g), groupState(g), g.ID}
					})
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the groups as the API returns them")
	return cmd
}

func selfRole(g groupapi.GroupInfo) string {
	switch {
	case g.Self.Admin:
		return "admin"
	case g.Self.Member:
		return "member"
	}
	return "-"
}

func groupState(g groupapi.GroupInfo) string {
	if g.Dissolved {
		return "dissolved"
	}
	return "active"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// timeText is t as the API writes it (RFC 3339), "" if zero.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

func newGroupShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show GROUP",
		Short: "Show a group: members, admins, roles, policy and log",
		Long: `show prints a group as this node folds it: its members (peer, role, admin,
the Things a member is restricted to, since when), its policy, and its log
of signed operations in fold order — kind, author, target, whether it had
effect, and when it was signed. An operation without effect (an outsider's,
a removed admin's concurrent act, …) stays in the log and is shown as such.`,
		Example: `  lmosnode group show diagnostics
  lmosnode group show bafkrei… --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				g, err := d.api.Group(ctx, id)
				if err != nil {
					return err
				}
				return output(cmd, g, func(g groupapi.GroupInfo) error { return printGroup(cmd.OutOrStdout(), g) })
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the group as the API returns it")
	return cmd
}

// printGroup writes group show's text form.
func printGroup(out io.Writer, g groupapi.GroupInfo) error {
	postRole := g.Policy.PostRole
	if postRole == "" {
		postRole = groups.RoleMember
	}
	maxMembers := "none"
	if g.Policy.MaxMembers > 0 {
		maxMembers = fmt.Sprint(g.Policy.MaxMembers)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ID:\t%s\n", g.ID)
	fmt.Fprintf(tw, "Name:\t%s\n", cell(g.Name))
	fmt.Fprintf(tw, "Founder:\t%s\n", cell(g.Founder.String()))
	fmt.Fprintf(tw, "Created:\t%s\n", cell(timeText(g.Created)))
	fmt.Fprintf(tw, "State:\t%s\n", groupState(g))
	fmt.Fprintf(tw, "Policy:\tpostRole %s, maxMembers %s\n", postRole, maxMembers)
	fmt.Fprintf(tw, "This node:\t%s\n", selfRole(g))
	fmt.Fprintf(tw, "Operations:\t%d, heads %s\n", g.Ops, cell(strings.Join(g.Heads, " ")))
	if err := tw.Flush(); err != nil {
		return err
	}

	members := slices.Clone(g.Members)
	slices.SortStableFunc(members, func(a, b groupapi.Member) int {
		if a.Admin != b.Admin {
			if a.Admin {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Peer.String(), b.Peer.String())
	})
	fmt.Fprintf(out, "\nMembers (%d):\n", len(members))
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tROLE\tADMIN\tTHINGS\tSINCE")
	for _, m := range members {
		things := "all"
		if len(m.Things) > 0 {
			things = strings.Join(m.Things, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Peer, cell(m.Role), yesNo(m.Admin), things, cell(timeText(m.Since)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(g.Log) == 0 {
		return nil
	}
	fmt.Fprintf(out, "\nLog (%d operations, fold order):\n", len(g.Log))
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tAUTHOR\tTARGET\tEFFECTIVE\tCREATED")
	for _, e := range g.Log {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(string(e.Kind)), cell(e.Author.String()), cell(e.Target()), yesNo(e.Effective), cell(timeText(e.Created)))
	}
	return tw.Flush()
}

func newGroupRemoveCmd() *cobra.Command {
	return changeCmd("remove GROUP PEER", "Remove a member (admins only)",
		`remove signs the removal of PEER from GROUP; this node must be an admin.
The removal takes effect on every node as soon as it arrives: the removed
member's next post is rejected, its next call of the group's Things refused.`,
		`  lmosnode group remove diagnostics 12D3KooW…`, cobra.ExactArgs(2),
		func(ctx context.Context, c *apiclient.Client, id string, args []string) (groupapi.GroupInfo, error) {
			p, err := parsePeerArg(args[1])
			if err != nil {
				return groupapi.GroupInfo{}, err
			}
			return c.RemoveMember(ctx, id, p)
		}, "removed member from")
}

func newGroupAdminCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin GROUP PEER --grant|--revoke",
		Short: "Make a member an admin, or an admin a plain member",
		Long: `admin grants (--grant) or revokes (--revoke) the admin role of PEER in
GROUP; this node must be an admin. The last admin cannot be revoked:
dissolve the group instead.`,
		Example: `  lmosnode group admin diagnostics 12D3KooW… --grant`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			grant, _ := cmd.Flags().GetBool("grant")
			revoke, _ := cmd.Flags().GetBool("revoke")
			if grant == revoke {
				return errors.New("give exactly one of --grant and --revoke")
			}
			p, err := parsePeerArg(args[1])
			if err != nil {
				return err
			}
			verb := "granted admin in"
			if revoke {
				verb = "revoked admin in"
			}
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				g, err := d.api.SetAdmin(ctx, id, p, grant)
				if err != nil {
					return err
				}
				return printGroupResult(cmd, verb, g)
			})
		},
	}
	cmd.Flags().Bool("grant", false, "make PEER an admin")
	cmd.Flags().Bool("revoke", false, "make PEER a plain member")
	cmd.Flags().Bool("json", false, "print the group as the API returns it")
	cmd.MarkFlagsMutuallyExclusive("grant", "revoke")
	return cmd
}

func newGroupRenameCmd() *cobra.Command {
	return changeCmd("rename GROUP NAME", "Rename a group (admins only)", "rename signs a new name for GROUP; this node must be an admin.",
		`  lmosnode group rename diagnostics diag-2027`, cobra.ExactArgs(2),
		func(ctx context.Context, c *apiclient.Client, id string, args []string) (groupapi.GroupInfo, error) {
			if strings.TrimSpace(args[1]) == "" {
				return groupapi.GroupInfo{}, errors.New("NAME: empty")
			}
			return c.RenameGroup(ctx, id, args[1])
		}, "renamed")
}

func newGroupLeaveCmd() *cobra.Command {
	return changeCmd("leave GROUP", "Leave a group",
		`leave signs this node's departure from GROUP. The last admin cannot leave:
dissolve the group instead.`,
		`  lmosnode group leave diagnostics`, cobra.ExactArgs(1),
		func(ctx context.Context, c *apiclient.Client, id string, _ []string) (groupapi.GroupInfo, error) {
			return c.LeaveGroup(ctx, id)
		}, "left")
}

func newGroupDissolveCmd() *cobra.Command {
	return changeCmd("dissolve GROUP", "End a group for everyone (admins only)",
		`dissolve signs the end of GROUP; this node must be an admin. Every later
operation is void, every node leaves the group's topic, and nobody can
reach a Thing through the group any more.`,
		`  lmosnode group dissolve diagnostics`, cobra.ExactArgs(1),
		func(ctx context.Context, c *apiclient.Client, id string, _ []string) (groupapi.GroupInfo, error) {
			return c.DissolveGroup(ctx, id)
		}, "dissolved")
}

func newGroupPublishCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "publish GROUP MESSAGE",
		Short: "Post a message to a group's members",
		Long: `publish posts MESSAGE on the group's topic, signed by this node; every
member's node that the policy lets post accepts it. MESSAGE is text, or
with --value a JSON value.`,
		Example: `  lmosnode group publish diagnostics "maintenance at 18:00"
  lmosnode group publish diagnostics --value '{"alert": "disk full"}'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var body json.RawMessage
			if asValue, _ := cmd.Flags().GetBool("value"); asValue {
				if !json.Valid([]byte(args[1])) {
					return fmt.Errorf("MESSAGE %q is not JSON (drop --value to send it as text)", args[1])
				}
				body = json.RawMessage(args[1])
			} else {
				b, err := json.Marshal(args[1])
				if err != nil {
					return err
				}
				body = b
			}
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				return d.api.Post(ctx, id, body)
			})
		},
	}
	cmd.Flags().Bool("value", false, "MESSAGE is a JSON value, not text")
	return cmd
}

func newGroupSubscribeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscribe GROUP",
		Short: "Print the messages posted to a group, as they come",
		Long: `subscribe prints every message posted on the group's topic from now on, one
line each: time, sender and the message (text plainly, other JSON as
JSON). --json prints each post as the API sends it. It runs until
interrupted (Ctrl-C) or the node ends the stream.`,
		Example: `  lmosnode group subscribe diagnostics`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return groupCommand(cmd, args[0], func(_ context.Context, d *daemon, id string) error {
				return followGroup(cmd, d, id)
			})
		},
	}
	cmd.Flags().Bool("json", false, "print each post as JSON, one per line")
	return cmd
}

// followGroup prints the posts to group id until the command is
// interrupted or the node ends the stream.
func followGroup(cmd *cobra.Command, d *daemon, id string) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	sub, err := d.api.Subscribe(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer func() { _ = sub.Close() }()
	asJSON, _ := cmd.Flags().GetBool("json")
	out := cmd.OutOrStdout()
	for {
		p, err := sub.Next()
		switch {
		case ctx.Err() != nil:
			return nil // interrupted: the normal end
		case errors.Is(err, io.EOF):
			return fmt.Errorf("subscription to group %s ended by the node", id)
		case err != nil:
			return fmt.Errorf("subscription to group %s ended: %w", id, err)
		case asJSON:
			b, err := json.Marshal(p)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, string(b))
		default:
			fmt.Fprintln(out, postLine(p))
		}
	}
}

// postLine is the text form of a post: "TIME SENDER: BODY", a text body
// plainly, any other JSON compact.
func postLine(p groupapi.Post) string {
	body := strings.TrimSpace(string(p.Body))
	var text string
	if json.Unmarshal(p.Body, &text) == nil {
		body = text
	} else {
		var buf bytes.Buffer
		if json.Compact(&buf, p.Body) == nil {
			body = buf.String()
		}
	}
	sent := ""
	if !p.Sent.IsZero() {
		sent = p.Sent.Local().Format("15:04:05")
	}
	return fmt.Sprintf("%s %s: %s", cell(sent), lmosproto.ShortPublisher(p.From), body)
}
