package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The group commands are thin clients of the node's group API
// (docs/groups.md, "HTTP API"); the types below are its JSON shapes.

// groupsPath is the root of the group API.
const groupsPath = "/api/v1/groups"

// invitePrefix starts every invitation token.
const invitePrefix = "lmosgroup:"

// groupInfo is the API's GroupInfo.
type groupInfo struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	Founder   string        `json:"founder"`
	Created   string        `json:"created"`
	Dissolved bool          `json:"dissolved"`
	Policy    groupPolicy   `json:"policy"`
	Members   []groupMember `json:"members"`
	Self      struct {
		Member bool `json:"member"`
		Admin  bool `json:"admin"`
	} `json:"self"`
	Heads []string          `json:"heads"`
	Ops   int               `json:"ops"`
	Log   []json.RawMessage `json:"log,omitempty"`
}

type groupPolicy struct {
	PostRole   string `json:"postRole,omitempty"`
	MaxMembers int    `json:"maxMembers,omitempty"`
}

type groupMember struct {
	Peer   string   `json:"peer"`
	Role   string   `json:"role"`
	Admin  bool     `json:"admin"`
	Things []string `json:"things"`
	Since  string   `json:"since"`
}

// groupPost is one message of the group's SSE stream.
type groupPost struct {
	From string          `json:"from"`
	Body json.RawMessage `json:"body"`
	Sent string          `json:"sent"`
}

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
  lmosnode group invite diagnostics --once --ttl 1h
  lmosnode group join lmosgroup:eyJ0eXBlIjoi…
  lmosnode group show diagnostics`,
	}
	group.AddCommand(
		newGroupCreateCmd(),
		newGroupInviteCmd(),
		newGroupJoinCmd(),
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

// groupCall sends one request of the group API and decodes a 2xx JSON
// answer into out (if not nil); any other answer is the problem it
// carries.
func (d *daemon) groupCall(ctx context.Context, method, path string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.apiURL+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, d.explain(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, d.explain(problemError(resp.StatusCode, b))
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// groups lists the groups the node knows.
func (d *daemon) groups(ctx context.Context) ([]groupInfo, error) {
	var gs []groupInfo
	if _, err := d.groupCall(ctx, http.MethodGet, groupsPath, nil, &gs); err != nil {
		return nil, err
	}
	return gs, nil
}

// resolveGroup turns a GROUP argument into a group ID: an ID the node
// knows, else the one group of this node with that name (groups this node
// belongs to first). Anything else that looks like an ID is passed on, so
// that the node answers for it.
func resolveGroup(ctx context.Context, d *daemon, arg string) (string, error) {
	if arg == "" {
		return "", errors.New("GROUP: empty")
	}
	gs, err := d.groups(ctx)
	if err != nil {
		return "", err
	}
	var named, mine []groupInfo
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
	return "", fmt.Errorf("no group named %q on this node (see 'lmosnode group ls')", arg)
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

// groupPath is the API path of group id, with more path elements.
func groupPath(id string, elems ...string) string {
	p := groupsPath + "/" + url.PathEscape(id)
	for _, e := range elems {
		p += "/" + url.PathEscape(e)
	}
	return p
}

// parsePeerArg checks a PEER argument.
func parsePeerArg(s string) (string, error) {
	id, err := peer.Decode(s)
	if err != nil {
		return "", fmt.Errorf("PEER %q is not a peer ID: %w", s, err)
	}
	return id.String(), nil
}

// groupCommand runs fn with the daemon, a request context and the
// resolved ID of args[0].
func groupCommand(cmd *cobra.Command, arg string, fn func(ctx context.Context, d *daemon, id string) error) error {
	d, err := connectDaemon(cmd)
	if err != nil {
		return err
	}
	ctx, cancel := d.ctx(cmd)
	defer cancel()
	id, err := resolveGroup(ctx, d, arg)
	if err != nil {
		return err
	}
	return fn(ctx, d, id)
}

// printGroupResult prints the GroupInfo a change answers with: --json as
// is, else one line.
func printGroupResult(cmd *cobra.Command, verb string, g groupInfo) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), g)
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s group %s (%s): %d member(s)%s\n", verb, cell(g.Name), g.ID, len(g.Members), dissolvedNote(g))
	return err
}

func dissolvedNote(g groupInfo) string {
	if g.Dissolved {
		return ", dissolved"
	}
	return ""
}

// changeCmd builds the commands that make one change and answer with the
// group: remove, rename, leave, dissolve.
func changeCmd(use, short, long, example string, args cobra.PositionalArgs,
	do func(ctx context.Context, d *daemon, id string, args []string, out *groupInfo) error, verb string) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				var g groupInfo
				if err := do(ctx, d, id, args, &g); err != nil {
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
			body := map[string]any{"name": args[0]}
			var pol groupPolicy
			pol.PostRole, _ = cmd.Flags().GetString("post-role")
			pol.MaxMembers, _ = cmd.Flags().GetInt("max-members")
			if pol.PostRole != "" && pol.PostRole != "member" && pol.PostRole != "admin" {
				return fmt.Errorf("--post-role: %q: want member or admin", pol.PostRole)
			}
			if pol.MaxMembers < 0 {
				return fmt.Errorf("--max-members: %d is negative", pol.MaxMembers)
			}
			if pol != (groupPolicy{}) {
				body["policy"] = pol
			}
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := d.ctx(cmd)
			defer cancel()
			var g groupInfo
			if _, err := d.groupCall(ctx, http.MethodPost, groupsPath, body, &g); err != nil {
				return err
			}
			return printGroupResult(cmd, "created", g)
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
with 'lmosnode group join TOKEN'. The token is printed alone on stdout.`,
		Example: `  lmosnode group invite diagnostics --once --ttl 1h
  lmosnode group invite diagnostics --for 12D3KooW… --thing urn:example:diagnostics`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			body := map[string]any{}
			if s, _ := f.GetString("for"); s != "" {
				p, err := parsePeerArg(s)
				if err != nil {
					return fmt.Errorf("--for: %w", err)
				}
				body["for"] = p
			}
			if f.Changed("ttl") {
				ttl, _ := f.GetDuration("ttl")
				if ttl <= 0 {
					return fmt.Errorf("--ttl: %s: want a positive duration", ttl)
				}
				body["ttl"] = ttl.String()
			}
			if once, _ := f.GetBool("once"); once {
				body["once"] = true
			}
			if role, _ := f.GetString("role"); role != "" {
				body["role"] = role
			}
			if things, _ := f.GetStringArray("thing"); len(things) > 0 {
				body["things"] = things
			}
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				var inv struct {
					Token   string `json:"token"`
					Expires string `json:"expires"`
				}
				if _, err := d.groupCall(ctx, http.MethodPost, groupPath(id, "invitations"), body, &inv); err != nil {
					return err
				}
				if asJSON, _ := f.GetBool("json"); asJSON {
					return printJSON(cmd.OutOrStdout(), inv)
				}
				if !strings.HasPrefix(inv.Token, invitePrefix) {
					return fmt.Errorf("the node answered a token without the %s prefix: %q", invitePrefix, inv.Token)
				}
				fmt.Fprintln(cmd.OutOrStdout(), inv.Token)
				if inv.Expires != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "expires %s\n", inv.Expires)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.String("for", "", "only this peer may join with the token")
	f.Duration("ttl", 24*time.Hour, "how long the token is valid")
	f.Bool("once", false, "the token can be used once")
	f.String("role", "", "the role of the joining member (default member)")
	f.StringArray("thing", nil, "restrict the member to this Thing of the group (repeatable)")
	f.Bool("json", false, "print the token and its expiry as JSON")
	return cmd
}

// tokenClaims reads what a token says about itself, unverified, for
// messages only: the node verifies the token.
func tokenClaims(token string) (group, name string, expires time.Time, err error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(token), invitePrefix)
	if !ok {
		return "", "", time.Time{}, fmt.Errorf("TOKEN: does not start with %q", invitePrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(body, "="))
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("TOKEN: not base64url: %w", err)
	}
	var c struct {
		Group   string    `json:"group"`
		Name    string    `json:"name"`
		Expires time.Time `json:"expires"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", "", time.Time{}, fmt.Errorf("TOKEN: not an invitation: %w", err)
	}
	if c.Group == "" {
		return "", "", time.Time{}, errors.New("TOKEN: names no group")
	}
	return c.Group, c.Name, c.Expires, nil
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
			group, name, expires, err := tokenClaims(token)
			if err != nil {
				return err
			}
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := d.ctx(cmd)
			defer cancel()
			var raw json.RawMessage
			status, err := d.groupCall(ctx, http.MethodPost, groupsPath+"/join", map[string]string{"token": token}, &raw)
			if err != nil {
				return err
			}
			if status == http.StatusOK {
				var g groupInfo
				if err := json.Unmarshal(raw, &g); err != nil {
					return fmt.Errorf("join: answer: %w", err)
				}
				return printGroupResult(cmd, "joined", g)
			}
			var pending struct {
				Group   string `json:"group"`
				Pending bool   `json:"pending"`
			}
			if err := json.Unmarshal(raw, &pending); err == nil && pending.Group != "" {
				group = pending.Group
			}
			if wait, _ := cmd.Flags().GetBool("wait"); !wait {
				if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
					return printJSON(cmd.OutOrStdout(), pending)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "join of group %s (%s) pending: no admin answered yet; the node keeps trying until %s\n",
					cell(name), group, expiresText(expires))
				return nil
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "join of group %s (%s) pending; waiting for an admin (until %s)\n", cell(name), group, expiresText(expires))
			return waitJoined(cmd, d, group, expires)
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
		var g groupInfo
		_, err := d.groupCall(rctx, http.MethodGet, groupPath(group), nil, &g)
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

func newGroupLsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the groups this node belongs to or knows",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := d.ctx(cmd)
			defer cancel()
			gs, err := d.groups(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				if gs == nil {
					gs = []groupInfo{}
				}
				return printJSON(out, gs)
			}
			if len(gs) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no groups yet: see 'lmosnode group create' and 'lmosnode group join'")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMEMBERS\tSELF\tSTATE\tID")
			for _, g := range gs {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", cell(g.Name), len(g.Members), selfRole(g), groupState(g), g.ID)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().Bool("json", false, "print the groups as the API returns them")
	return cmd
}

func selfRole(g groupInfo) string {
	switch {
	case g.Self.Admin:
		return "admin"
	case g.Self.Member:
		return "member"
	}
	return "-"
}

func groupState(g groupInfo) string {
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

// logEntry is one operation of a group's log as group show prints it.
type logEntry struct {
	ID, Kind, Author, Target, Created string
	Effective                         bool
}

// parseLogEntry reads an entry of GroupInfo.log: {"id", "kind",
// "author", "created", "peer"?, "effective", "op": {signed operation}}.
// What the entry does not say is read from the signed operation: its
// target (peer, name or policy), and the author and time of its proof.
func parseLogEntry(raw json.RawMessage) (logEntry, error) {
	var w struct {
		ID        string          `json:"id"`
		Kind      string          `json:"kind"`
		Author    string          `json:"author"`
		Peer      string          `json:"peer"`
		Name      string          `json:"name"`
		Policy    json.RawMessage `json:"policy"`
		Created   string          `json:"created"`
		Effective *bool           `json:"effective"`
		Op        json.RawMessage `json:"op"`
		Proof     *struct {
			VerificationMethod string `json:"verificationMethod"`
			Created            string `json:"created"`
		} `json:"proof"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return logEntry{}, err
	}
	var e logEntry
	if len(w.Op) > 0 && string(w.Op) != "null" {
		inner, err := parseLogEntry(w.Op)
		if err != nil {
			return logEntry{}, fmt.Errorf("op: %w", err)
		}
		e = inner
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{{&e.ID, w.ID}, {&e.Kind, w.Kind}, {&e.Author, w.Author}, {&e.Created, w.Created}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	e.Effective = w.Effective == nil || *w.Effective
	switch {
	case w.Peer != "":
		e.Target = w.Peer
	case w.Name != "":
		e.Target = w.Name
	case len(w.Policy) > 0 && string(w.Policy) != "null":
		var buf bytes.Buffer
		if json.Compact(&buf, w.Policy) == nil {
			e.Target = buf.String()
		}
	}
	if w.Proof != nil {
		if e.Author == "" {
			if did, _, _ := strings.Cut(w.Proof.VerificationMethod, "#"); did != "" {
				if pub, err := lmosproto.ParseDIDKey(did); err == nil {
					if id, err := lmosproto.PeerIDFromEd25519(pub); err == nil {
						e.Author = id.String()
					}
				}
			}
		}
		if e.Created == "" {
			e.Created = w.Proof.Created
		}
	}
	return e, nil
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
				var raw json.RawMessage
				if _, err := d.groupCall(ctx, http.MethodGet, groupPath(id), nil, &raw); err != nil {
					return err
				}
				if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
					return printJSON(cmd.OutOrStdout(), raw)
				}
				var g groupInfo
				if err := json.Unmarshal(raw, &g); err != nil {
					return fmt.Errorf("group %s: answer: %w", id, err)
				}
				return printGroup(cmd.OutOrStdout(), g)
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the group as the API returns it")
	return cmd
}

// printGroup writes group show's text form.
func printGroup(out io.Writer, g groupInfo) error {
	postRole := g.Policy.PostRole
	if postRole == "" {
		postRole = "member"
	}
	maxMembers := "none"
	if g.Policy.MaxMembers > 0 {
		maxMembers = fmt.Sprint(g.Policy.MaxMembers)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ID:\t%s\n", g.ID)
	fmt.Fprintf(tw, "Name:\t%s\n", cell(g.Name))
	fmt.Fprintf(tw, "Founder:\t%s\n", cell(g.Founder))
	fmt.Fprintf(tw, "Created:\t%s\n", cell(g.Created))
	fmt.Fprintf(tw, "State:\t%s\n", groupState(g))
	fmt.Fprintf(tw, "Policy:\tpostRole %s, maxMembers %s\n", postRole, maxMembers)
	fmt.Fprintf(tw, "This node:\t%s\n", selfRole(g))
	fmt.Fprintf(tw, "Operations:\t%d, heads %s\n", g.Ops, cell(strings.Join(g.Heads, " ")))
	if err := tw.Flush(); err != nil {
		return err
	}

	members := append([]groupMember(nil), g.Members...)
	sort.SliceStable(members, func(i, j int) bool {
		if members[i].Admin != members[j].Admin {
			return members[i].Admin
		}
		return members[i].Peer < members[j].Peer
	})
	fmt.Fprintf(out, "\nMembers (%d):\n", len(members))
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tROLE\tADMIN\tTHINGS\tSINCE")
	for _, m := range members {
		things := "all"
		if len(m.Things) > 0 {
			things = strings.Join(m.Things, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Peer, cell(m.Role), yesNo(m.Admin), things, cell(m.Since))
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
	for i, raw := range g.Log {
		e, err := parseLogEntry(raw)
		if err != nil {
			return fmt.Errorf("log entry %d: %w", i, err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(e.Kind), cell(e.Author), cell(e.Target), yesNo(e.Effective), cell(e.Created))
	}
	return tw.Flush()
}

func newGroupRemoveCmd() *cobra.Command {
	return changeCmd("remove GROUP PEER", "Remove a member (admins only)",
		`remove signs the removal of PEER from GROUP; this node must be an admin.
The removal takes effect on every node as soon as it arrives: the removed
member's next post is rejected, its next call of the group's Things refused.`,
		`  lmosnode group remove diagnostics 12D3KooW…`, cobra.ExactArgs(2),
		func(ctx context.Context, d *daemon, id string, args []string, g *groupInfo) error {
			p, err := parsePeerArg(args[1])
			if err != nil {
				return err
			}
			_, err = d.groupCall(ctx, http.MethodDelete, groupPath(id, "members", p), nil, g)
			return err
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
			method, verb := http.MethodPut, "granted admin in"
			if revoke {
				method, verb = http.MethodDelete, "revoked admin in"
			}
			return groupCommand(cmd, args[0], func(ctx context.Context, d *daemon, id string) error {
				var g groupInfo
				if _, err := d.groupCall(ctx, method, groupPath(id, "admins", p), nil, &g); err != nil {
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
		func(ctx context.Context, d *daemon, id string, args []string, g *groupInfo) error {
			if strings.TrimSpace(args[1]) == "" {
				return errors.New("NAME: empty")
			}
			_, err := d.groupCall(ctx, http.MethodPatch, groupPath(id), map[string]string{"name": args[1]}, g)
			return err
		}, "renamed")
}

func newGroupLeaveCmd() *cobra.Command {
	return changeCmd("leave GROUP", "Leave a group",
		`leave signs this node's departure from GROUP. The last admin cannot leave:
dissolve the group instead.`,
		`  lmosnode group leave diagnostics`, cobra.ExactArgs(1),
		func(ctx context.Context, d *daemon, id string, _ []string, g *groupInfo) error {
			_, err := d.groupCall(ctx, http.MethodPost, groupPath(id, "leave"), nil, g)
			return err
		}, "left")
}

func newGroupDissolveCmd() *cobra.Command {
	return changeCmd("dissolve GROUP", "End a group for everyone (admins only)",
		`dissolve signs the end of GROUP; this node must be an admin. Every later
operation is void, every node leaves the group's topic, and nobody can
reach a Thing through the group any more.`,
		`  lmosnode group dissolve diagnostics`, cobra.ExactArgs(1),
		func(ctx context.Context, d *daemon, id string, _ []string, g *groupInfo) error {
			_, err := d.groupCall(ctx, http.MethodDelete, groupPath(id), nil, g)
			return err
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
				_, err := d.groupCall(ctx, http.MethodPost, groupPath(id, "messages"), body, nil)
				return err
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
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			rctx, cancel := d.ctx(cmd)
			id, err := resolveGroup(rctx, d, args[0])
			cancel()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			asJSON, _ := cmd.Flags().GetBool("json")
			out := cmd.OutOrStdout()
			return d.follow(ctx, d.apiURL+groupPath(id, "messages"), "group "+id, func(resp *http.Response) error {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				return d.explain(problemError(resp.StatusCode, b))
			}, func(event, data string) (bool, error) {
				switch event {
				case "error":
					return true, problemError(http.StatusBadGateway, []byte(data))
				case "post", "":
				default:
					return false, nil
				}
				if asJSON {
					fmt.Fprintln(out, data)
					return false, nil
				}
				line, err := postLine(data)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "unreadable post: %v\n", err)
					return false, nil
				}
				fmt.Fprintln(out, line)
				return false, nil
			})
		},
	}
	cmd.Flags().Bool("json", false, "print each post as JSON, one per line")
	return cmd
}

// postLine is the text form of a post: "TIME SENDER: BODY", a text body
// plainly, any other JSON compact.
func postLine(data string) (string, error) {
	var p groupPost
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return "", err
	}
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
	sent := p.Sent
	if t, err := time.Parse(time.RFC3339Nano, p.Sent); err == nil {
		sent = t.Local().Format("15:04:05")
	}
	return fmt.Sprintf("%s %s: %s", cell(sent), shortPeerID(p.From), body), nil
}
