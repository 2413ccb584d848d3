package node_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestGroupInvitationAttacks runs the attacks of issue 14 on group
// invitations across four real nodes: node 0 founds a group and invites
// node 1 with a token for anyone and any number of uses (the most a
// scraper could hope for); node 2 is an outsider that reads the group's log
// from the DHT and tries to join with everything it finds in it, over the
// raw join protocol; node 1, once removed, retries its old token; a revoked
// token is refused; a spent single-use token is refused; fresh invitations
// still admit node 3 and the removed node 1.
func TestGroupInvitationAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	net := testnet.New(t, 4, testnet.Options{})
	net.Link(1, 0)
	net.Link(2, 0)
	net.Link(3, 0)
	net.Link(2, 1)
	nodes := net.Nodes
	admin, victim, outsider, fresh := nodes[0], nodes[1], nodes[2], nodes[3]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	info, err := admin.Groups().Create(ctx, "secret-lab", nil)
	if err != nil {
		t.Fatal(err)
	}
	gid := info.ID
	leaky, _, err := admin.Groups().Invite(gid, groupsvc.InviteOptions{Uses: groupsvc.UnlimitedUses, TTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := victim.Groups().Join(ctx, leaky); err != nil || res.Pending {
		t.Fatalf("node 1 joins: %+v, %v", res, err)
	}

	// The outsider reads the log from the DHT once it holds node 1's add.
	var record []byte
	testnet.WaitFor(t, "the outsider reads a log with node 1's add from the DHT", waitLong, func() (bool, string) {
		gctx, gcancel := context.WithTimeout(ctx, 5*time.Second)
		defer gcancel()
		raw, err := outsider.DHT().GetValue(gctx, groups.Key(gid))
		if err != nil {
			return false, err.Error()
		}
		l, err := groups.ParseLog(gid, raw)
		if err != nil {
			return false, err.Error()
		}
		record = raw
		return l.State().IsMember(victim.PeerID()), "no add yet"
	})
	leakyInv, err := groups.ParseInvitation(leaky, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	secret := tokenSecret(t, leaky)
	if bytes.Contains(record, []byte(secret)) || bytes.Contains(record, []byte(leaky[len(groups.InvitePrefix):])) {
		t.Fatal("the DHT log holds the token or its secret")
	}

	// The record embeds the invitation without its secret; the outsider
	// tries everything it can make of it.
	scraped, err := groups.ParseLog(gid, record)
	if err != nil {
		t.Fatal(err)
	}
	invs := scraped.Invitations()
	if len(invs) != 1 || invs[0].ID != leakyInv.ID || invs[0].HasSecret() {
		t.Fatalf("invitations in the record: %+v", invs)
	}
	tries := scrapeTokens(t, gid, record)
	refused := joinRefused(t, ctx, outsider.Host(), admin.PeerID(), tries)
	// And through its own node, with what its node would accept as a token.
	for _, tok := range tries {
		if _, err := outsider.Groups().Join(ctx, tok); err == nil {
			t.Fatalf("the outsider's node joined with %.80q…", tok)
		}
	}
	t.Logf("outsider: %d raw join attempts from the DHT log, %d refused", len(tries), refused)

	// Removed, node 1 retries its old (unlimited, unexpired) token.
	if _, err := admin.Groups().Remove(ctx, gid, victim.PeerID()); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "node 1 removed on nodes 0 and 1", waitLong, testnet.All([]*node.Node{admin, victim}, func(n *node.Node) bool {
		st, ok := n.Groups().State(gid)
		return ok && !st.IsMember(victim.PeerID())
	}))
	if _, err := victim.Groups().Join(ctx, leaky); !refusedWith(err, http.StatusForbidden) {
		t.Fatalf("the removed member's retry with its old token: %v, want refused 403", err)
	}
	if ans := rawJoin(t, ctx, victim.Host(), admin.PeerID(), leaky); ans.Log != nil || ans.Status != http.StatusForbidden {
		t.Fatalf("the removed member's raw retry: %+v", ans)
	}
	// Others may still use the token: it is not revoked. The outsider,
	// handed the token now, could join; the admin revokes it first.
	adminAPI := apiclient.New("http://"+admin.APIAddr(), httpapi.BearerClient(admin.APIToken()))
	ins, err := adminAPI.Invitations(ctx, gid, false)
	if err != nil || !slices.ContainsFunc(ins, func(in groupapi.InvitationInfo) bool {
		return in.ID == leakyInv.ID && in.Used == 1 && in.Status == groupsvc.InvitationOutstanding && in.Mine
	}) {
		t.Fatalf("outstanding invitations: %+v, %v", ins, err)
	}
	if _, err := adminAPI.RevokeInvitation(ctx, gid, leakyInv.ID); err != nil {
		t.Fatal(err)
	}
	if !mustState(t, admin, gid).InvitationRevoked(leakyInv.ID) {
		t.Fatal("the admin's state does not show the revocation")
	}
	// (The outsider's raw attempts used up its rate limit at the admin's
	// node, which would make its node's joins pending: its further tries
	// are raw ones, which wait their turn.)
	if ans := rawJoin(t, ctx, outsider.Host(), admin.PeerID(), leaky); ans.Log != nil || ans.Status != http.StatusGone {
		t.Fatalf("the outsider's join with a revoked token: %+v, want 410", ans)
	}
	if _, err := fresh.Groups().Join(ctx, leaky); !refusedWith(err, http.StatusGone) {
		t.Fatalf("join with a revoked token: %v, want refused 410", err)
	}
	if ins, err := adminAPI.Invitations(ctx, gid, false); err != nil || slices.ContainsFunc(ins, func(in groupapi.InvitationInfo) bool { return in.ID == leakyInv.ID }) {
		t.Fatalf("outstanding invitations after the revocation: %+v, %v", ins, err)
	}
	all, err := adminAPI.Invitations(ctx, gid, true)
	if err != nil || !slices.ContainsFunc(all, func(in groupapi.InvitationInfo) bool {
		return in.ID == leakyInv.ID && in.Status == groupsvc.InvitationRevoked
	}) {
		t.Fatalf("all invitations: %+v, %v", all, err)
	}

	// A fresh default invitation (single use, for anyone) admits node 3,
	// and is spent: the outsider cannot use it after.
	once, err := adminAPI.Invite(ctx, gid, groupsvc.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// (Issued up to a second ahead: after node 1's removal, see Invite.)
	if until := time.Until(once.Expires); until > groupsvc.DefaultInviteTTL+2*time.Second || until < groupsvc.DefaultInviteTTL-time.Minute {
		t.Errorf("a default invitation expires in %s, want %s", until, groupsvc.DefaultInviteTTL)
	}
	if res, err := fresh.Groups().Join(ctx, once.Token); err != nil || res.Pending {
		t.Fatalf("node 3 joins with a fresh invitation: %+v, %v", res, err)
	}
	if ans := rawJoin(t, ctx, outsider.Host(), admin.PeerID(), once.Token); ans.Log != nil || ans.Status != http.StatusGone {
		t.Fatalf("second use of a single-use token: %+v, want 410", ans)
	}
	// A fresh invitation bound to node 1 admits it again, and nobody else.
	back, err := adminAPI.Invite(ctx, gid, groupsvc.InviteOptions{For: victim.PeerID()})
	if err != nil {
		t.Fatal(err)
	}
	if ans := rawJoin(t, ctx, outsider.Host(), admin.PeerID(), back.Token); ans.Log != nil || ans.Status != http.StatusForbidden {
		t.Fatalf("the outsider with node 1's invitation: %+v, want 403", ans)
	}
	if res, err := victim.Groups().Join(ctx, back.Token); err != nil || res.Pending {
		t.Fatalf("node 1 rejoins with a fresh invitation: %+v, %v", res, err)
	}
	testnet.WaitFor(t, "nodes 0, 1 and 3 are the members everywhere", waitLong,
		testnet.All([]*node.Node{admin, victim, fresh}, hasMembers(gid, admin, victim, fresh)))
	for _, n := range nodes {
		if st, ok := n.Groups().State(gid); ok && st.IsMember(outsider.PeerID()) {
			t.Fatalf("node %s holds the outsider as a member", n.PeerID())
		}
	}
}

// scrapeTokens returns everything an outsider can make of a group's log
// record (from the DHT) as a join token: the invitations the adds embed,
// with made-up secrets or none; every string in the record as a token; the
// record's operations as tokens.
func scrapeTokens(t *testing.T, gid string, record []byte) []string {
	t.Helper()
	scraped, err := groups.ParseLog(gid, record)
	if err != nil {
		t.Fatal(err)
	}
	var tries []string
	for _, inv := range scraped.Invitations() {
		for _, s := range []string{"", base64.RawURLEncoding.EncodeToString(make([]byte, 32)), base64.RawURLEncoding.EncodeToString([]byte(inv.ID))} {
			w := map[string]any{"invitation": json.RawMessage(inv.Raw), "secret": s}
			b, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			tries = append(tries, groups.InvitePrefix+base64.RawURLEncoding.EncodeToString(b), groups.InvitePrefix+base64.RawURLEncoding.EncodeToString(inv.Raw))
		}
	}
	for _, op := range scraped.Ops() {
		tries = append(tries, groups.InvitePrefix+base64.RawURLEncoding.EncodeToString(op.Raw))
	}
	for _, m := range regexp.MustCompile(`"([^"\\]{16,})"`).FindAllSubmatch(record, -1) {
		tries = append(tries, string(m[1]))
		if !bytes.HasPrefix(m[1], []byte(groups.InvitePrefix)) {
			tries = append(tries, groups.InvitePrefix+string(m[1]))
		}
	}
	return tries
}

// joinRefused tries to join at admin from h with each token over the raw
// join protocol, fails the test if one is admitted, and returns how many
// were refused.
func joinRefused(t *testing.T, ctx context.Context, h host.Host, admin peer.ID, tokens []string) int {
	t.Helper()
	refused := 0
	for _, tok := range tokens {
		ans := rawJoin(t, ctx, h, admin, tok)
		if ans.Log != nil || ans.Status < 400 {
			t.Fatalf("the admin's node admitted %s with %.80q…: status %d, error %q, log of %d bytes", h.ID(), tok, ans.Status, ans.Error, len(ans.Log))
		}
		refused++
	}
	return refused
}

// tokenSecret returns the secret member of a token.
func tokenSecret(t *testing.T, token string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, groups.InvitePrefix))
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(raw, &w); err != nil || w.Secret == "" {
		t.Fatalf("token without a secret: %v", err)
	}
	return w.Secret
}

// joinAnswer is the answer frame of the join protocol.
type joinAnswer struct {
	Log    json.RawMessage `json:"log"`
	Error  string          `json:"error"`
	Status int             `json:"status"`
}

// rawJoin sends a join request with token from h to admin over the join
// protocol, as a hostile peer would, and returns the answer. A
// rate-limited answer (429) is retried.
func rawJoin(t *testing.T, ctx context.Context, h host.Host, admin peer.ID, token string) joinAnswer {
	t.Helper()
	req, err := json.Marshal(map[string]string{"token": token})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := h.NewStream(ctx, admin, protocol.ID(groups.ProtocolJoin))
		if err != nil {
			t.Fatal(err)
		}
		if err := lmosproto.WriteFrame(st, req); err != nil {
			t.Fatal(err)
		}
		if err := st.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		raw, err := lmosproto.ReadFrame(st, groups.MaxLogSize+64<<10)
		_ = st.Close()
		if err != nil {
			t.Fatal(err)
		}
		var ans joinAnswer
		if err := json.Unmarshal(raw, &ans); err != nil {
			t.Fatalf("answer %q: %v", raw, err)
		}
		if ans.Status != http.StatusTooManyRequests {
			return ans
		}
		select {
		case <-ctx.Done():
			t.Fatal("rate limited until the test's end")
		case <-time.After(groupsvc.ServeEvery):
		}
	}
}

// refusedWith reports whether err is a join refused with status.
func refusedWith(err error, status int) bool {
	var r *groupsvc.RefusedError
	return errors.As(err, &r) && r.Status == status
}
