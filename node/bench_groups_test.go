package node_test

// Row 8 of the performance table (scripts/bench.sh): how long a member's
// removal takes to be in force on a whole group, against raw gossipsub
// delivering a message of the same size. It reuses the row-1 network
// helpers of bench_net_test.go (prefix bn).

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/internal/benchtab"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// BenchmarkGroupRemove is row 8: on N nodes linked as in row 1 (a ring
// plus chords), all members of one group founded by node 0, node 1 serving
// a Thing restricted to the group, the time from node 0's Remove call
// until every other node's state of the group no longer lists the removed
// member and node 1 refuses it (its Allowed answers false; a real call
// from the victim's node is then checked to get 403, outside the timed
// part). The baseline is raw gossipsub delivering a message of the remove
// operation's size to all N raw hosts, linked the same way. The victims
// rotate over nodes 2…N-1: each sample ends by adding its victim back
// (invitation and Join, not timed) and waiting until every node lists it,
// so that every sample starts with all N nodes members.
func BenchmarkGroupRemove(b *testing.B) {
	for _, n := range []int{10, 25} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { bgRemove(b, n) })
	}
}

// bgPoll is how often the timed part looks at the nodes' states.
const bgPoll = 100 * time.Microsecond

func bgRemove(b *testing.B, n int) {
	begin := time.Now()
	net := testnet.New(b, n, testnet.Options{})
	links := bnTopology(net)
	raw := bnRawNet(b, n, true)
	nodes := net.Nodes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The group: node 0 founds it, every other node joins.
	info, err := nodes[0].Groups().Create(ctx, "bench-remove", nil)
	if err != nil {
		b.Fatal(err)
	}
	gid, topic := info.ID, groups.Topic(info.ID)
	token, _, err := nodes[0].Groups().Invite(gid, groupsvc.InviteOptions{TTL: time.Hour, Uses: groupsvc.UnlimitedUses})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i < n; i++ {
		bgJoin(b, ctx, nodes[i], token)
	}
	for _, v := range nodes {
		bgWaitMember(b, nodes, gid, v.PeerID(), true)
	}

	// The group's Thing, on node 1.
	owner := nodes[1]
	thingID := testnet.UniqueID(b)
	if _, err := owner.Register(bgTD(b, thingID, gid), diagnoser()); err != nil {
		b.Fatal(err)
	}
	clients := make(map[peer.ID]*interact.Client)
	client := func(nd *node.Node) *interact.Client {
		c := clients[nd.PeerID()]
		if c == nil {
			if c, err = interact.NewClient(interact.ClientDeps{Host: nd.Host()}, interact.TransportConfig{}); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			clients[nd.PeerID()] = c
		}
		return c
	}
	if got := callThing(b, ctx, client(nodes[2]).Invoker(owner.PeerID()), thingID); got != "ok" {
		b.Fatalf("a member's call: %s", got)
	}

	// Every node and host knows a topic peer on each of its links, and
	// three heartbeats have grafted the meshes (as in row 1).
	bnWait(b, "topic peers", func() bool {
		for i := range n {
			if len(nodes[i].PubSub().ListPeers(topic)) < 2 || len(raw[i].topic.ListPeers()) < 2 {
				return false
			}
		}
		return true
	})
	time.Sleep(3 * time.Second)

	rawArrivals := make(chan bnArrival, 4*n)
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{}, n)
	defer func() {
		rcancel()
		for range n {
			<-done
		}
	}()
	for i, r := range raw {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				m, err := r.sub.Next(rctx)
				if err != nil {
					return
				}
				bnSend(rctx, rawArrivals, bnArrival{i, string(m.GetData()[:16]), time.Now()})
			}
		}()
	}

	victims := nodes[2:]
	var size int
	var lm, rw, calls, removeCalls []time.Duration
	var readd time.Duration
	victimKnew, i := 0, 0
	b.Logf("N=%d: setup %s", n, time.Since(begin).Round(time.Millisecond))
	for b.Loop() {
		v := victims[i%len(victims)]
		vid := v.PeerID()
		bgQuiet(b)

		// lmosnode: Remove until every other node dropped the victim and
		// the owner refuses it.
		start := time.Now()
		if _, err := nodes[0].Groups().Remove(ctx, gid, vid); err != nil {
			b.Fatal(err)
		}
		removeCalls = append(removeCalls, time.Since(start))
		lm = append(lm, bgUntilRemoved(b, nodes, owner, v, gid, thingID, start))
		if st, _ := v.Groups().State(gid); !st.IsMember(vid) {
			victimKnew++
		}
		// Not timed: a real call from the victim's node is refused. A
		// call made while the members evict the victim (they close their
		// connections to it and dial again) can fail with 502 instead;
		// the next one is refused.
		t1 := time.Now()
		for got := ""; got != "403"; {
			got = callThing(b, ctx, client(v).Invoker(owner.PeerID()), thingID)
			if got != "403" && (got != "502" || time.Since(t1) > 5*time.Second) {
				b.Fatalf("the removed member's call: %s, want 403", got)
			}
		}
		calls = append(calls, time.Since(t1))
		if size == 0 {
			size = bgRemoveSize(b, nodes[0], gid)
		}
		time.Sleep(bnPause)

		// Raw gossipsub: a message of the remove operation's size from
		// raw host 0 until all N hosts have it.
		msg := make([]byte, size)
		_, _ = crand.Read(msg)
		start = time.Now()
		if err := raw[0].topic.Publish(ctx, msg); err != nil {
			b.Fatal(err)
		}
		rw = append(rw, bnCollect(b, rawArrivals, string(msg[:16]), n, start))

		// Not timed: the victim is a member again everywhere, and the
		// owner lets it call.
		t0 := time.Now()
		tok, _, err := nodes[0].Groups().Invite(gid, groupsvc.InviteOptions{For: vid, TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		bgJoin(b, ctx, v, tok)
		bgWaitMember(b, nodes, gid, vid, true)
		bnWait(b, "the owner allows the victim again", func() bool { return owner.Groups().Allowed([]string{gid}, thingID, vid) })
		readd += time.Since(t0)
		i++
	}
	b.StopTimer()
	b.Logf("N=%d, %d samples, %d-byte remove messages, %d links; Remove call p50 %.2f ms (signed, persisted, published); "+
		"re-adding a victim took %.0f ms on average; 403 call after removal p50 %.2f ms; the victim knew of its removal at the end of %d samples",
		n, len(lm), size, len(links), bnPercentile(removeCalls, 50), float64(readd)/float64(max(i, 1))/1e6, bnPercentile(calls, 50), victimKnew)
	for _, p := range []struct {
		metric string
		pct    float64
	}{{"p50", 50}, {"p99", 99}} {
		l, r := bnPercentile(lm, p.pct), bnPercentile(rw, p.pct)
		b.ReportMetric(l, "lmos-"+p.metric+"-ms")
		b.ReportMetric(r, "raw-"+p.metric+"-ms")
		benchtab.Print(benchtab.Row{Row: "8", Case: fmt.Sprintf("group remove → refused on all N=%d", n), Metric: p.metric, Unit: "ms",
			LMOS: l, Base: r, Baseline: "raw gossipsub"})
	}
}

// bgQuiet waits (at most bgQuietMax) until the process used less than
// bgQuietCPU of CPU time in bgQuietWindow: a re-added member's syncs (its
// federation sync with every member, their syncs back, the DHT put of the
// log) are over, so that each sample starts on a quiet network.
func bgQuiet(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(bgQuietMax)
	for {
		cpu := bnCPU(tb)
		time.Sleep(bgQuietWindow)
		if bnCPU(tb)-cpu < bgQuietCPU || time.Now().After(deadline) {
			return
		}
	}
}

const (
	bgQuietWindow = 100 * time.Millisecond
	bgQuietCPU    = 10 * time.Millisecond
	bgQuietMax    = 3 * time.Second
)

// bgUntilRemoved polls until no node but v lists v as a member of gid and
// the owner no longer allows v to call thingID, and returns when the last
// of these happened, relative to start.
func bgUntilRemoved(tb testing.TB, nodes []*node.Node, owner, v *node.Node, gid, thingID string, start time.Time) time.Duration {
	tb.Helper()
	vid := v.PeerID()
	pending := make(map[*node.Node]bool, len(nodes))
	for _, nd := range nodes {
		if nd != v {
			pending[nd] = true
		}
	}
	refused := false
	var last time.Time
	deadline := start.Add(bnDeadline)
	for len(pending) > 0 || !refused {
		now := time.Now()
		for nd := range pending {
			if st, _ := nd.Groups().State(gid); !st.IsMember(vid) {
				delete(pending, nd)
				last = now
			}
		}
		if !refused && !owner.Groups().Allowed([]string{gid}, thingID, vid) {
			refused = true
			last = now
		}
		if now.After(deadline) {
			var why []string
			for nd := range pending {
				st, _ := nd.Groups().State(gid)
				why = append(why, fmt.Sprintf("%s: %d ops, topic peers %d", nd.PeerID().ShortString(), st.Ops, len(nd.PubSub().ListPeers(groups.Topic(gid)))))
			}
			st0, _ := nodes[0].Groups().State(gid)
			for k, nd := range nodes {
				in, _ := nd.Groups().Show(gid)
				var kinds []string
				for _, o := range in.Log {
					kinds = append(kinds, fmt.Sprintf("%s %s>%s %v", o.ID[len(o.ID)-6:], o.Kind, o.Peer.ShortString(), o.Effective))
				}
				tb.Logf("node %d %s: %v", k, nd.PeerID().ShortString(), kinds)
			}
			tb.Fatalf("remove of %s: nodes still listing it: %v (node 0 has %d ops); owner refuses: %v; after %s", vid.ShortString(), why, st0.Ops, refused, bnDeadline)
		}
		time.Sleep(bgPoll)
	}
	return last.Sub(start)
}

// bgJoin joins nd to a group with token; the join must not stay pending.
func bgJoin(tb testing.TB, ctx context.Context, nd *node.Node, token string) {
	tb.Helper()
	res, err := nd.Groups().Join(ctx, token)
	if err != nil || res.Pending {
		tb.Fatalf("%s joins: %+v, %v", nd.PeerID(), res, err)
	}
}

// bgWaitMember waits until every one of nodes has (member) or has not p as
// a member of gid.
func bgWaitMember(tb testing.TB, nodes []*node.Node, gid string, p peer.ID, member bool) {
	tb.Helper()
	bnWait(tb, fmt.Sprintf("%s member of the group everywhere: %v", p, member), func() bool {
		for _, nd := range nodes {
			if st, _ := nd.Groups().State(gid); st.IsMember(p) != member {
				return false
			}
		}
		return true
	})
}

// bgRemoveSize returns the size of the last remove operation of gid on
// nd, as it travels on the group topic ({"op": …}).
func bgRemoveSize(tb testing.TB, nd *node.Node, gid string) int {
	tb.Helper()
	in, err := nd.Groups().Show(gid)
	if err != nil {
		tb.Fatal(err)
	}
	for k := len(in.Log) - 1; k >= 0; k-- {
		if in.Log[k].Kind != groups.KindRemove {
			continue
		}
		data, err := json.Marshal(groups.Message{Op: in.Log[k].Op})
		if err != nil {
			tb.Fatal(err)
		}
		return len(data)
	}
	tb.Fatal("no remove operation in the log")
	return 0
}

// bgTD is a Tool restricted to group gid with one action, "diagnose".
func bgTD(tb testing.TB, id, gid string) *lmosproto.TD {
	tb.Helper()
	td, err := lmosproto.ParseTD(fmt.Appendf(nil, `{
	  "@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
	  "@type": ["lmos:Tool"], "id": %q, "title": "Diagnostics",
	  "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc",
	  "lmos:groups": [%q],
	  "actions": {"diagnose": {"output": {"type": "string"}, "forms": [{"href": "https://diag.example/diagnose"}]}}
	}`, id, gid))
	if err != nil {
		tb.Fatal(err)
	}
	return td
}
