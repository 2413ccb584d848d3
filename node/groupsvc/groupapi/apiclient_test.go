package groupapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// wantStatus checks that err is the problem of status.
func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	var p *lmosproto.Problem
	if !errors.As(err, &p) || p.Status != status || p.Detail == "" {
		t.Errorf("%s: %v, want a %d problem", what, err, status)
	}
}

// TestClient runs every group operation of apiclient.Client against two
// nodes' APIs: an admin and a member who joins by invitation.
func TestClient(t *testing.T) {
	a, b := newServer(t), newServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ac, bc := a.client, b.client

	g, err := ac.CreateGroup(ctx, "lab", &groups.Policy{MaxMembers: 5})
	if err != nil || g.Name != "lab" || !g.Self.Admin || g.Policy.MaxMembers != 5 || len(g.Members) != 1 || g.Members[0].Peer != a.self {
		t.Fatalf("Create: %+v, %v", g, err)
	}
	inv, err := ac.Invite(ctx, "lab", groupsvc.InviteOptions{For: b.self, TTL: time.Hour, Role: "auditor", Things: []string{"urn:lab:scope"}})
	if err != nil || !strings.HasPrefix(inv.Token, groups.InvitePrefix) || time.Until(inv.Expires) > time.Hour || time.Until(inv.Expires) < 50*time.Minute {
		t.Fatalf("Invite: %+v, %v", inv, err)
	}
	res, err := bc.Join(ctx, inv.Token)
	if err != nil || res.Pending || res.Group != g.ID || res.Info == nil || !res.Info.Self.Member || len(res.Info.Members) != 2 {
		t.Fatalf("Join: %+v, %v", res, err)
	}
	// The scope: the log holds its digest; the issuing node shows the
	// Thing ID, the joiner's node (which never saw it) the digest.
	digest := groups.ScopeDigest(g.ID, "urn:lab:scope")
	if shown, err := ac.Group(ctx, g.ID); err != nil || memberThings(shown, b.self.String()) != "urn:lab:scope" ||
		strings.Contains(string(shown.Log[len(shown.Log)-1].Op), "urn:lab:scope") {
		t.Errorf("the admin's view of the scope: %+v, %v", shown.Members, err)
	}
	if shown, err := bc.Group(ctx, g.ID); err != nil || memberThings(shown, b.self.String()) != digest {
		t.Errorf("the joiner's view of the scope: %+v, %v", shown.Members, err)
	}
	_, err = bc.Join(ctx, "lmosgroup:AAAA")
	wantStatus(t, "Join with a bad token", err, http.StatusBadRequest)

	// Invitations: the used one is spent (single use by default), a new
	// one for anyone is outstanding until revoked.
	open, err := ac.Invite(ctx, "lab", groupsvc.InviteOptions{Uses: groupsvc.UnlimitedUses})
	if err != nil || !groups.IsID(open.ID) {
		t.Fatalf("Invite: %+v, %v", open, err)
	}
	outstanding, err := ac.Invitations(ctx, "lab", false)
	if err != nil || len(outstanding) != 1 || outstanding[0].ID != open.ID || outstanding[0].Uses != 0 || !outstanding[0].Mine ||
		outstanding[0].Status != groupsvc.InvitationOutstanding || outstanding[0].Things == nil {
		t.Fatalf("Invitations: %+v, %v", outstanding, err)
	}
	all, err := ac.Invitations(ctx, "lab", true)
	if err != nil || len(all) != 2 || all[1].ID != inv.ID || all[1].Status != groupsvc.InvitationSpent || all[1].Used != 1 ||
		all[1].For != b.self || all[1].Role != "auditor" || !slices.Equal(all[1].Things, []string{"urn:lab:scope"}) {
		t.Fatalf("Invitations all: %+v, %v", all, err)
	}
	_, err = bc.RevokeInvitation(ctx, "lab", open.ID)
	wantStatus(t, "RevokeInvitation by a plain member", err, http.StatusForbidden)
	_, err = ac.RevokeInvitation(ctx, "lab", "nope")
	wantStatus(t, "RevokeInvitation of a malformed ID", err, http.StatusBadRequest)
	if g, err = ac.RevokeInvitation(ctx, "lab", open.ID); err != nil || g.Ops != 3 {
		t.Fatalf("RevokeInvitation: %+v, %v", g, err)
	}
	if outstanding, err = ac.Invitations(ctx, "lab", false); err != nil || len(outstanding) != 0 {
		t.Fatalf("Invitations after the revocation: %+v, %v", outstanding, err)
	}
	_, err = ac.Invite(ctx, "lab", groupsvc.InviteOptions{Uses: -5})
	wantStatus(t, "Invite with negative uses", err, http.StatusBadRequest)
	_, err = bc.RenameGroup(ctx, g.ID, "mine")
	wantStatus(t, "Rename by a plain member", err, http.StatusForbidden)

	if g, err = ac.SetAdmin(ctx, g.ID, b.self, true); err != nil || !adminOf(g, b.self.String()) {
		t.Fatalf("SetAdmin grant: %+v, %v", g, err)
	}
	if g, err = ac.SetAdmin(ctx, g.ID, b.self, false); err != nil || adminOf(g, b.self.String()) {
		t.Fatalf("SetAdmin revoke: %+v, %v", g, err)
	}
	if g, err = ac.RenameGroup(ctx, "lab", "lab-2"); err != nil || g.Name != "lab-2" {
		t.Fatalf("Rename: %+v, %v", g, err)
	}
	if g, err = ac.SetGroupPolicy(ctx, "lab-2", groups.Policy{PostRole: groups.RoleAdmin}); err != nil || g.Policy.PostRole != groups.RoleAdmin {
		t.Fatalf("SetPolicy: %+v, %v", g, err)
	}
	list, err := ac.Groups(ctx)
	if err != nil || len(list) != 1 || list[0].ID != g.ID || list[0].Log != nil {
		t.Fatalf("List: %+v, %v", list, err)
	}

	shown, err := ac.Group(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	for _, e := range shown.Log {
		if e.Author != a.self || e.Created.IsZero() || !e.Effective {
			t.Errorf("log entry %+v", e)
		}
		log = append(log, fmt.Sprintf("%s %s", e.Kind, e.Target()))
	}
	want := []string{"genesis lab", "add " + b.self.String(), "uninvite invitation " + open.ID, "grant " + b.self.String(), "revoke " + b.self.String(),
		"rename lab-2", `policy {"postRole":"admin"}`}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	_, err = ac.Group(ctx, "nope")
	wantStatus(t, "Show of an unknown group", err, http.StatusNotFound)

	// Posts: the stream carries the node's own post.
	sub, err := ac.Subscribe(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := ac.Post(ctx, g.ID, json.RawMessage(`"hello"`)); err != nil {
		t.Fatal(err)
	}
	if p, err := sub.Next(); err != nil || p.From != a.self || string(p.Body) != `"hello"` {
		t.Fatalf("Next: %+v, %v", p, err)
	}
	_, err = ac.Subscribe(ctx, "nope")
	wantStatus(t, "Subscribe to an unknown group", err, http.StatusNotFound)

	_, err = ac.LeaveGroup(ctx, g.ID)
	wantStatus(t, "Leave by the last admin", err, http.StatusConflict)
	if g, err = ac.RemoveMember(ctx, g.ID, b.self); err != nil || len(g.Members) != 1 {
		t.Fatalf("Remove: %+v, %v", g, err)
	}
	if g, err = ac.DissolveGroup(ctx, g.ID); err != nil || !g.Dissolved {
		t.Fatalf("Dissolve: %+v, %v", g, err)
	}
	// The node leaves the topic of a dissolved group: the stream ends.
	if p, err := sub.Next(); err != io.EOF {
		t.Fatalf("Next after Dissolve: %+v, %v", p, err)
	}
}

func adminOf(g groupapi.GroupInfo, p string) bool {
	for _, m := range g.Members {
		if m.Peer.String() == p {
			return m.Admin
		}
	}
	return false
}

// A client of something that is not the group API (or of a node of
// another version) gets the status and the body as its problem.
func TestClientPlainError(t *testing.T) {
	s := newServer(t)
	c := apiclient.New(s.url+"/elsewhere", nil)
	_, err := c.Groups(context.Background())
	var p *lmosproto.Problem
	if !errors.As(err, &p) || p.Status != http.StatusNotFound || p.Detail != "404 page not found" {
		t.Fatalf("List elsewhere: %#v", err)
	}
}

// Example founds a group on a node, invites, renames it and reads its
// log, through the node's group API and apiclient.
func Example() {
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	s, err := startServer(func(f func()) { cleanups = append(cleanups, f) })
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	c := apiclient.New(s.url, nil) // the URL of the node's api file

	g, err := c.CreateGroup(ctx, "diagnostics", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created", g.Name, "members:", len(g.Members), "admin:", g.Self.Admin)
	inv, err := c.Invite(ctx, "diagnostics", groupsvc.InviteOptions{TTL: time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("token:", strings.HasPrefix(inv.Token, "lmosgroup:"))
	if _, err := c.RenameGroup(ctx, g.ID, "diag"); err != nil {
		fmt.Println(err)
		return
	}
	shown, err := c.Group(ctx, "diag")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range shown.Log {
		fmt.Println(e.Kind, e.Target(), e.Effective)
	}
	// The last admin cannot leave: the API's problem is the error.
	_, err = c.LeaveGroup(ctx, "diag")
	var p *lmosproto.Problem
	fmt.Println(errors.As(err, &p), p.Status)
	// Output:
	// created diagnostics members: 1 admin: true
	// token: true
	// genesis diagnostics true
	// rename diag true
	// true 409
}

// memberThings returns the scope of member p in g, joined by commas.
func memberThings(g groupapi.GroupInfo, p string) string {
	for _, m := range g.Members {
		if m.Peer.String() == p {
			return strings.Join(m.Things, ",")
		}
	}
	return "(not a member)"
}
