package groupsvc_test

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestResubscribeRetried: b dropped c's subscription to the group topic (c
// was no member for b yet). When b learns that c is one, it asks c to
// announce it again, and c refuses (here: b is over its rate at c, as a
// busy or slow member may be). b asks again and has c on the topic within
// seconds, not at the next anti-entropy round (10 min here).
//
// The rate at c is a token bucket that refills while b's requests drain
// it, so b's first ask may find a token: the scenario then shows nothing
// and runs again with new peers, at most three times.
func TestResubscribeRetried(t *testing.T) {
	for range 3 {
		if resubscribeRetried(t) {
			return
		}
		t.Log("b's first ask found a token at c; again")
	}
	t.Fatal("b's first ask was never refused")
}

// resubscribeRetried runs the scenario once and reports whether b's ask
// was refused, so that the scenario tested the retry.
func resubscribeRetried(t *testing.T) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := groupsvc.Config{AntiEntropyEvery: 10 * time.Minute}
	a, b, c := newMemberConfig(t, cfg), newMemberConfig(t, cfg), newMemberConfig(t, cfg)
	a.connect(b)
	a.connect(c)
	info, err := a.svc.Create(ctx, "retry", nil)
	if err != nil {
		t.Fatal(err)
	}
	id, topic := info.ID, groups.Topic(info.ID)
	token, _, err := a.svc.Invite(id, groupsvc.InviteOptions{Uses: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Join(ctx, token); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b a member at a and b", memberOfAll(id, b.id(), a, b))

	// b stops hearing a (neither can dial the other), so c's membership
	// reaches b only when they link again; c's subscription reaches b
	// before that, and b drops it.
	a.host.Peerstore().ClearAddrs(b.id())
	b.host.Peerstore().ClearAddrs(a.id())
	if err := b.host.Network().ClosePeer(a.id()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.svc.Join(ctx, token); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c a member at a and c", memberOfAll(id, c.id(), a, c))
	b.connect(c)
	waitFor(t, "b on the topic at c", func() bool { return slices.Contains(c.ps.ListPeers(topic), b.id()) })
	if st, _ := b.svc.State(id); st.IsMember(c.id()) {
		t.Fatal("b knows c as a member before it links to a again")
	}
	if slices.Contains(b.ps.ListPeers(topic), c.id()) {
		t.Fatal("b has c on the topic before it knows c as a member")
	}

	// b's sync requests, four at a time, exhaust its rate at c until 3 s
	// after b learned (from a) that c is a member and asked c.
	stop := make(chan struct{})
	var drain sync.WaitGroup
	for range 4 {
		drain.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, err := b.host.NewStream(ctx, c.id(), protocol.ID(groups.ProtocolSync))
				if err != nil {
					continue
				}
				_ = lmosproto.WriteFrame(s, []byte(`{"group":"`+id+`"}`))
				_ = s.CloseWrite()
				_, _ = io.Copy(io.Discard, s)
				_ = s.Close()
			}
		})
	}
	stopDrain := sync.OnceFunc(func() {
		close(stop)
		drain.Wait()
	})
	defer stopDrain()
	waitFor(t, "c refusing b for its rate", func() bool { return c.svc.Refused() > 0 })
	a.connect(b)
	waitFor(t, "c a member at b", memberOfAll(id, c.id(), b))
	time.Sleep(3 * time.Second)
	stopDrain()
	if slices.Contains(b.ps.ListPeers(topic), c.id()) {
		return false
	}
	waitFor(t, "c on the topic at b", func() bool { return slices.Contains(b.ps.ListPeers(topic), c.id()) })
	return true
}
