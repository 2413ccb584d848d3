package groupsvc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"go.uber.org/goleak"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func memberOfAll(id string, p peer.ID, ms ...*member) func() bool {
	return func() bool {
		for _, m := range ms {
			st, ok := m.svc.State(id)
			if !ok || !st.IsMember(p) {
				return false
			}
		}
		return true
	}
}

func subscribed(m *member, topic string) bool {
	return slices.Contains(m.ps.GetTopics(), topic)
}

// TestGroupLife runs a group through its life on four peers: an admin, two
// members and an outsider.
func TestGroupLife(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b, c, out := newMember(t), newMember(t), newMember(t), newMember(t)
	a.connect(b)
	b.connect(c)
	a.connect(c)
	out.connect(a)
	out.connect(b)

	info, err := a.svc.Create(ctx, "diagnostics", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := info.ID
	if !info.Self.Admin || len(info.Members) != 1 || info.Policy.PostRole != groups.RoleMember {
		t.Fatalf("Create: %+v", info)
	}
	if got, err := a.svc.Resolve("diagnostics"); err != nil || got != id {
		t.Fatalf("Resolve by name: %q, %v", got, err)
	}
	topic := groups.Topic(id)
	outSub := rawSubscribe(t, out, topic)

	// A single-use token bound to b, a multi-use one for anyone.
	forB, _, err := a.svc.Invite(id, groupsvc.InviteOptions{For: b.id()})
	if err != nil {
		t.Fatal(err)
	}
	anyone, _, err := a.svc.Invite(id, groupsvc.InviteOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.svc.Join(ctx, forB); !isStatus(err, http.StatusForbidden) {
		t.Fatalf("c joins with b's token: %v, want 403", err)
	}
	res, err := b.svc.Join(ctx, forB)
	if err != nil || res.Pending || res.Info == nil || !res.Info.Self.Member {
		t.Fatalf("b joins: %+v, %v", res, err)
	}
	if _, err := c.svc.Join(ctx, anyone); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three members everywhere", func() bool {
		return memberOfAll(id, b.id(), a, b, c)() && memberOfAll(id, c.id(), a, b, c)()
	})
	if !b.svc.Allowed([]string{"other", id}, "urn:x", c.id()) || b.svc.Allowed([]string{id}, "urn:x", out.id()) {
		t.Fatal("Allowed: wrong answer for a member or an outsider")
	}

	// Posts reach every member and nobody else, not even an outsider that
	// subscribed before the members joined.
	var chans []<-chan groupsvc.Received
	for _, m := range []*member{a, b, c} {
		ch, stop, err := m.svc.Subscribe(id)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		chans = append(chans, ch)
	}
	waitForState(t, "topic meshes", func() (bool, string) {
		ok, state := true, ""
		for _, m := range []*member{a, b, c} {
			peers := m.ps.ListPeers(topic)
			ok = ok && len(peers) == 2
			state += fmt.Sprintf("%s has %v; ", m.id(), peers)
		}
		return ok, state
	})
	if err := b.svc.Publish(ctx, id, json.RawMessage(`"hello"`)); err != nil {
		t.Fatal(err)
	}
	for i, ch := range chans {
		select {
		case r := <-ch:
			if r.From != b.id() || string(r.Body) != `"hello"` {
				t.Errorf("member %d got %+v", i, r)
			}
		case <-ctx.Done():
			t.Fatalf("member %d got no post", i)
		}
	}
	for _, m := range []*member{a, b, c} {
		if slices.Contains(m.ps.ListPeers(topic), out.id()) {
			t.Errorf("%s counts the outsider among its topic peers", m.id())
		}
	}
	if n := outSub.count(); n != 0 {
		t.Errorf("the outsider received %d messages on the group topic", n)
	}

	// Forged and expired invitations.
	tampered := forB[:len(forB)-4] + "AAAA"
	if _, err := out.svc.Join(ctx, tampered); !errors.Is(err, groupsvc.ErrBadRequest) {
		t.Errorf("tampered token: %v, want ErrBadRequest", err)
	}
	expired, err := groups.NewInvitation(a.key, groups.Invitation{Group: id, Name: "diagnostics", Expires: time.Now().Add(-time.Minute)}, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.svc.Join(ctx, expired); !isStatus(err, http.StatusGone) {
		t.Errorf("expired token: %v, want 410", err)
	}
	// Signed by b, a member but no admin: b's node refuses it.
	byB, err := groups.NewInvitation(b.key, groups.Invitation{Group: id, Name: "diagnostics", Addrs: addrsOf(b), Expires: time.Now().Add(time.Hour)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.svc.Join(ctx, byB); !isStatus(err, http.StatusForbidden) {
		t.Errorf("token by a non-admin: %v, want 403", err)
	}
	if st, _ := a.svc.State(id); st.IsMember(out.id()) || len(st.Members) != 3 {
		t.Fatalf("members after the refused joins: %v", st.Members)
	}

	// Removal: c is out everywhere, leaves the topic, cannot post.
	if _, err := a.svc.Remove(ctx, id, c.id()); err != nil {
		t.Fatal(err)
	}
	// An invitation made right after the removal (the same second, as a
	// rule) is issued after it, so that it admits c again.
	again, _, err := a.svc.Invite(id, groupsvc.InviteOptions{For: c.id()})
	if err != nil {
		t.Fatal(err)
	}
	againInv, err := groups.ParseInvitation(again, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := a.svc.State(id); !againInv.Issued.After(st.LastRemoval()) {
		t.Errorf("an invitation made after the removal (%s) was issued at %s", st.LastRemoval(), againInv.Issued)
	}
	waitFor(t, "c removed everywhere", func() bool {
		for _, m := range []*member{a, b, c} {
			if st, _ := m.svc.State(id); st.IsMember(c.id()) {
				return false
			}
		}
		return !subscribed(c, topic)
	})
	if err := c.svc.Publish(ctx, id, json.RawMessage(`"still here"`)); !errors.Is(err, groupsvc.ErrNotMember) {
		t.Errorf("removed member posts: %v, want ErrNotMember", err)
	}
	if c.svc.MemberOf(id) || b.svc.Allowed([]string{id}, "", c.id()) {
		t.Error("the removed member is still a member")
	}
	if _, err := a.svc.Leave(ctx, id); !errors.Is(err, groupsvc.ErrLastAdmin) {
		t.Errorf("last admin leaves: %v, want ErrLastAdmin", err)
	}
	if _, err := b.svc.Remove(ctx, id, a.id()); !errors.Is(err, groupsvc.ErrNotAdmin) {
		t.Errorf("a member removes: %v, want ErrNotAdmin", err)
	}
	show, err := a.svc.Show(id)
	if err != nil || len(show.Log) != show.Ops || show.Ops != 4 {
		t.Fatalf("Show: %d ops, log of %d, %v", show.Ops, len(show.Log), err)
	}

	// Dissolution: every member leaves the topic; nobody is allowed.
	if _, err := a.svc.Dissolve(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "dissolved everywhere", func() bool {
		st, _ := b.svc.State(id)
		return st.Dissolved && !subscribed(a, topic) && !subscribed(b, topic)
	})
	if b.svc.Allowed([]string{id}, "urn:x", a.id()) || a.svc.MemberOf(id) {
		t.Error("a dissolved group still allows")
	}
	if err := a.svc.Publish(ctx, id, json.RawMessage(`1`)); !errors.Is(err, groupsvc.ErrDissolved) {
		t.Errorf("post to a dissolved group: %v", err)
	}
	if a.changes.Load() == 0 || b.changes.Load() == 0 {
		t.Error("OnChange never called")
	}
}

// TestPendingJoinAndRestart stops the only admin, joins (pending), and
// restarts the admin from its datastore: the join completes, and the
// restarted admin has its group.
func TestPendingJoinAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, d := newMember(t), newMember(t)
	info, err := a.svc.Create(ctx, "lab", &groups.Policy{PostRole: groups.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := a.svc.Invite(info.ID, groupsvc.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	aKey, aStore := a.key, a.store
	a.stop()

	res, err := d.svc.Join(ctx, token)
	if err != nil || !res.Pending || res.Group != info.ID {
		t.Fatalf("join with the admin away: %+v, %v; want pending", res, err)
	}
	if p := d.svc.Pending(); len(p) != 1 || p[0].Group != info.ID {
		t.Fatalf("Pending: %+v", p)
	}

	// The pending join survives a restart of the joiner.
	dKey, dStore := d.key, d.store
	d.stop()
	d = startMember(t, dKey, dStore)
	if p := d.svc.Pending(); len(p) != 1 || p[0].Group != info.ID {
		t.Fatalf("Pending after restart: %+v", p)
	}

	a2 := startMember(t, aKey, aStore)
	if st, ok := a2.svc.State(info.ID); !ok || !st.IsAdmin(a2.id()) {
		t.Fatal("the restarted admin lost its group")
	}
	d.connect(a2)
	waitFor(t, "pending join completes", func() bool { return d.svc.MemberOf(info.ID) && len(d.svc.Pending()) == 0 })
	if err := d.svc.Publish(ctx, info.ID, json.RawMessage(`"x"`)); !errors.Is(err, groupsvc.ErrNotAllowed) {
		t.Errorf("a member posts under postRole admin: %v, want ErrNotAllowed", err)
	}

	// d restarts: its group, log and membership survive.
	d.stop()
	d2 := startMember(t, dKey, dStore)
	if !d2.svc.MemberOf(info.ID) {
		t.Fatal("membership lost across a restart")
	}
	if got := d2.svc.List(); len(got) != 1 || got[0].Ops != 2 {
		t.Fatalf("List after restart: %+v", got)
	}
	waitFor(t, "topic joined after restart", func() bool { return subscribed(d2, groups.Topic(info.ID)) })
}

func isStatus(err error, status int) bool {
	var r *groupsvc.RefusedError
	return errors.As(err, &r) && r.Status == status
}

func addrsOf(m *member) []string {
	var out []string
	for _, a := range m.host.Addrs() {
		out = append(out, a.String()+"/p2p/"+m.id().String())
	}
	return out
}

// rawSub is a plain pubsub subscription that counts what arrives.
type rawSub struct {
	n chan struct{}
}

func (r *rawSub) count() int { return len(r.n) }

// rawSubscribe subscribes m's pubsub to topic directly, as an outsider's
// node would, and counts the messages it receives.
func rawSubscribe(t *testing.T, m *member, topic string) *rawSub {
	t.Helper()
	tp, err := m.ps.Join(topic)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := tp.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	r := &rawSub{n: make(chan struct{}, 1024)}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		for {
			msg, err := sub.Next(ctx)
			if err != nil {
				return
			}
			if !strings.EqualFold(string(msg.ReceivedFrom), string(m.id())) {
				r.n <- struct{}{}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		sub.Cancel()
		<-done
		_ = tp.Close()
	})
	return r
}
