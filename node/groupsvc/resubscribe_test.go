package groupsvc_test

import (
	"context"
	"io"
	"slices"
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
func TestResubscribeRetried(t *testing.T) {
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

	// b's sync requests exhaust its rate at c, until 2 s after b learned
	// (from a) that c is a member and asked c.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s, err := b.host.NewStream(ctx, c.id(), protocol.ID(groups.ProtocolSync)); err == nil {
				_ = lmosproto.WriteFrame(s, []byte(`{"group":"`+id+`"}`))
				_ = s.CloseWrite()
				_, _ = io.Copy(io.Discard, s)
				_ = s.Close()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-stopped
	}()
	waitFor(t, "c refusing b for its rate", func() bool { return c.svc.Refused() > 0 })
	a.connect(b)
	waitFor(t, "c a member at b", memberOfAll(id, c.id(), b))
	time.Sleep(2 * time.Second)
	close(stop)
	<-stopped
	if slices.Contains(b.ps.ListPeers(topic), c.id()) {
		t.Fatal("c on the topic at b while it refused b: the test does not test the retry")
	}
	waitFor(t, "c on the topic at b", func() bool { return slices.Contains(b.ps.ListPeers(topic), c.id()) })
}
