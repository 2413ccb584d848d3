package fanout

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// rejectCounter is a pubsub.RawTracer counting the messages its router
// rejected by validation.
type rejectCounter struct {
	mu       sync.Mutex
	rejected int
}

func (r *rejectCounter) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rejected
}

func (r *rejectCounter) RejectMessage(_ *pubsub.Message, reason string) {
	if reason == pubsub.RejectValidationFailed {
		r.mu.Lock()
		r.rejected++
		r.mu.Unlock()
	}
}
func (*rejectCounter) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (*rejectCounter) OnClosedOutboundStream(peer.ID)           {}
func (*rejectCounter) AddPeer(peer.ID, protocol.ID)             {}
func (*rejectCounter) RemovePeer(peer.ID)                       {}
func (*rejectCounter) Join(string)                              {}
func (*rejectCounter) Leave(string)                             {}
func (*rejectCounter) Graft(peer.ID, string)                    {}
func (*rejectCounter) Prune(peer.ID, string)                    {}
func (*rejectCounter) ValidateMessage(*pubsub.Message)          {}
func (*rejectCounter) DeliverMessage(*pubsub.Message)           {}
func (*rejectCounter) DuplicateMessage(*pubsub.Message)         {}
func (*rejectCounter) ThrottlePeer(peer.ID)                     {}
func (*rejectCounter) RecvRPC(*pubsub.RPC)                      {}
func (*rejectCounter) SendRPC(*pubsub.RPC, peer.ID)             {}
func (*rejectCounter) DropRPC(*pubsub.RPC, peer.ID)             {}
func (*rejectCounter) UndeliverableMessage(*pubsub.Message)     {}

// testNode is a raw libp2p host with gossipsub configured as the node
// configures it (node/p2p/libp2p.go): content-derived message IDs, StrictSign,
// flood publishing; a short heartbeat so that meshes form quickly.
type testNode struct {
	h       host.Host
	ps      *pubsub.PubSub
	rejects *rejectCounter

	mu     sync.Mutex
	scores map[peer.ID]float64 // peer scores, inspected every 100 ms
}

func (n *testNode) score(p peer.ID) float64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.scores[p]
}

// testTopicScore is what the node gives its announce topic (P4 counts
// rejected messages), trimmed to what the tests look at.
var testTopicScore = &pubsub.TopicScoreParams{
	TopicWeight:                     1,
	TimeInMeshQuantum:               time.Second,
	FirstMessageDeliveriesDecay:     pubsub.ScoreParameterDecay(time.Hour),
	InvalidMessageDeliveriesWeight:  -10,
	InvalidMessageDeliveriesDecay:   pubsub.ScoreParameterDecay(10 * time.Minute),
	MeshMessageDeliveriesDecay:      pubsub.ScoreParameterDecay(time.Hour),
	MeshFailurePenaltyDecay:         pubsub.ScoreParameterDecay(time.Hour),
	MeshMessageDeliveriesWindow:     10 * time.Millisecond,
	MeshMessageDeliveriesActivation: time.Second,
}

func newTestNet(t *testing.T, n int) []*testNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	nodes := make([]*testNode, n)
	for i := range nodes {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay(), libp2p.DisableMetrics())
		if err != nil {
			t.Fatal(err)
		}
		gs := pubsub.DefaultGossipSubParams()
		gs.HeartbeatInterval = 100 * time.Millisecond
		gs.HeartbeatInitialDelay = 50 * time.Millisecond
		rc := &rejectCounter{}
		node := &testNode{h: h, rejects: rc}
		scoreParams := &pubsub.PeerScoreParams{
			Topics:                map[string]*pubsub.TopicScoreParams{},
			AppSpecificScore:      func(peer.ID) float64 { return 0 },
			DecayInterval:         pubsub.DefaultDecayInterval,
			DecayToZero:           pubsub.DefaultDecayToZero,
			RetainScore:           time.Minute,
			BehaviourPenaltyDecay: pubsub.ScoreParameterDecay(10 * time.Minute),
		}
		thresholds := &pubsub.PeerScoreThresholds{GossipThreshold: -20, PublishThreshold: -50, GraylistThreshold: -80}
		ps, err := pubsub.NewGossipSub(ctx, h,
			pubsub.WithPeerScore(scoreParams, thresholds),
			pubsub.WithPeerScoreInspect(func(s map[peer.ID]float64) {
				node.mu.Lock()
				node.scores = s
				node.mu.Unlock()
			}, 100*time.Millisecond),
			pubsub.WithGossipSubParams(gs),
			pubsub.WithMessageIdFn(func(m *pubsubpb.Message) string {
				sum := sha256.Sum256(m.GetData())
				return string(sum[:])
			}),
			pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
			pubsub.WithFloodPublish(true),
			pubsub.WithRawTracer(rc))
		if err != nil {
			t.Fatal(err)
		}
		node.ps = ps
		nodes[i] = node
	}
	t.Cleanup(func() {
		cancel()
		for _, n := range nodes {
			_ = n.h.Close()
		}
	})
	// A ring: every node is connected to its two neighbours only, so most
	// events travel through relays.
	for i, a := range nodes {
		if n < 2 {
			break
		}
		b := nodes[(i+1)%n]
		if err := a.h.Connect(ctx, peer.AddrInfo{ID: b.h.ID(), Addrs: b.h.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

const sensorTD = `{
  "@context": "https://www.w3.org/2022/wot/td/v1.1",
  "id": "urn:example:sensor",
  "title": "Sensor",
  "securityDefinitions": {"nosec": {"scheme": "nosec"}}, "security": "nosec",
  "events": {
    "tick": {"data": {"type": "integer"}, "forms": [{"href": "tick"}]},
    "ping": {"forms": [{"href": "ping"}]}
  }
}`

func parseTD(t *testing.T, s string) *lmosproto.TD {
	t.Helper()
	td, err := lmosproto.ParseTD([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func newFanout(t *testing.T, deps Deps, cfg Config) *Fanout {
	t.Helper()
	f, err := New(deps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close fanout: %v", err)
		}
	})
	return f
}

// failInvoker stands for the per-subscriber stream to the owner: it
// records and refuses every request (a subscription served from the topic
// sends it only the Invoker's probe).
type failInvoker struct {
	mu    sync.Mutex
	calls []*lmosproto.Message
}

func (r *failInvoker) Invoke(_ context.Context, req *lmosproto.Message) (interact.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req)
	return nil, errors.New("remote invoker called")
}

func recv(t *testing.T, ch <-chan *lmosproto.Message, what string) *lmosproto.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing received", what)
	}
	return nil
}

func TestFanoutRing(t *testing.T) {
	nodes := newTestNet(t, 6)
	td := parseTD(t, sensorTD)
	owner := nodes[0].h.ID()

	// The owner: an engine with a Go SDK Thing, and a Fanout publishing it.
	engine, err := interact.NewEngine(interact.EngineDeps{Things: interact.ThingsFunc(func(id string) (*lmosproto.TD, bool) { return td, id == td.ID })}, interact.EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close() })
	sensor := interact.NewThing()
	engine.SetBackend(td.ID, sensor)
	pub := newFanout(t, Deps{PubSub: nodes[0].ps, Self: owner, Local: engine, TopicScore: testTopicScore}, Config{})
	if err := pub.Publish(td); err != nil {
		t.Fatal(err)
	}
	topic := TopicName(owner, td.ID)

	// Subscribers on nodes 1–4; node 3 through the Invoker adapter.
	lookup := func(p peer.ID, id string) (*lmosproto.TD, bool) { return td, p == owner && id == td.ID }
	const buffer = 8
	subs := make([]*Fanout, 5)
	for i := 1; i <= 4; i++ {
		subs[i] = newFanout(t, Deps{PubSub: nodes[i].ps, Self: nodes[i].h.ID(), TD: lookup, TopicScore: testTopicScore}, Config{Buffer: buffer})
	}
	ctx := context.Background()
	ticks := map[int]<-chan *lmosproto.Message{}
	cancels := map[int]func(){}
	for _, i := range []int{1, 2, 4} {
		ticks[i], cancels[i], err = subs[i].Subscribe(ctx, owner, td.ID, "tick")
		if err != nil {
			t.Fatal(err)
		}
	}
	remote := &failInvoker{}
	iv := &Invoker{Owner: owner, Remote: remote, Fanout: subs[3]}
	req := lmosproto.NewMessage(td.ID, lmosproto.MsgSubscribeEvent)
	req.Name = "tick"
	session, err := iv.Invoke(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	ticks[3] = session.Replies()

	// A subscriber on node 4 that never reads: dropped once it holds
	// buffer events, without holding the others up.
	slow, cancelSlow, err := subs[4].Subscribe(ctx, owner, td.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cancelSlow()

	// Warm up: ping until every node gets pings, so the mesh carries
	// events to all of them.
	pings := map[int]<-chan *lmosproto.Message{}
	pingCancels := map[int]func(){}
	for i := 1; i <= 4; i++ {
		pings[i], pingCancels[i], err = subs[i].Subscribe(ctx, owner, td.ID, "ping")
		if err != nil {
			t.Fatal(err)
		}
	}
	waiting := map[int]bool{1: true, 2: true, 3: true, 4: true}
	for deadline := time.Now().Add(15 * time.Second); len(waiting) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("nodes %v never received a ping", waiting)
		}
		sensor.Emit("ping", lmosproto.Value{})
		time.Sleep(100 * time.Millisecond)
		for i := 1; i <= 4; i++ {
			for drained := false; !drained; {
				select {
				case <-pings[i]:
					delete(waiting, i)
				default:
					drained = true
				}
			}
		}
	}
	for _, c := range pingCancels {
		c()
	}
	// Pings fill the slow subscriber of all events: it is dropped with a
	// 503 after the events it holds.
	for range buffer + 1 {
		sensor.Emit("ping", lmosproto.Value{})
		time.Sleep(10 * time.Millisecond)
	}
	for n := 0; ; n++ {
		m := recv(t, slow, "slow subscriber")
		if m.Type == lmosproto.MsgError {
			if m.Status != "503" || n != buffer {
				t.Fatalf("slow subscriber: %d events then %v (status %s, %s)", n, m.Type, m.Status, m.Detail)
			}
			break
		}
	}
	if _, ok := <-slow; ok {
		t.Fatal("slow subscriber: channel open after the error")
	}

	// Twenty ticks; every subscriber gets them all, in order, read
	// concurrently.
	const count = 20
	var wg sync.WaitGroup
	got := make([][]int, 5)
	errs := make(chan error, 5)
	for i, ch := range ticks {
		wg.Go(func() {
			for len(got[i]) < count {
				select {
				case m, ok := <-ch:
					if !ok {
						errs <- fmt.Errorf("node %d: closed after %v", i, got[i])
						return
					}
					if m.Type != lmosproto.MsgEvent || m.Name != "tick" || m.ThingID != td.ID {
						errs <- fmt.Errorf("node %d: unexpected %v %q of %q: %s", i, m.Type, m.Name, m.ThingID, m.Detail)
						return
					}
					if i == 3 && m.CorrelationID != req.Correlation() {
						errs <- fmt.Errorf("node 3 (adapter): correlationID %q, want %q", m.CorrelationID, req.Correlation())
						return
					}
					var v int
					if err := m.Data.Decode(&v); err != nil {
						errs <- fmt.Errorf("node %d: data %s: %w", i, m.Data, err)
						return
					}
					got[i] = append(got[i], v)
				case <-time.After(10 * time.Second):
					errs <- fmt.Errorf("node %d: got only %v", i, got[i])
					return
				}
			}
		})
	}
	for v := range count {
		data, _ := lmosproto.ValueOf(v)
		sensor.Emit("tick", data)
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := make([]int, count)
	for i := range want {
		want[i] = i
	}
	for i := 1; i <= 4; i++ {
		if !slices.Equal(got[i], want) {
			t.Errorf("node %d received %v, want %v", i, got[i], want)
		}
	}
	if len(remote.calls) != 1 || remote.calls[0].Type != lmosproto.MsgSubscribeEvent {
		t.Errorf("the adapter sent %d requests to the owner, want only its probe of the subscription", len(remote.calls))
	}
	if t.Failed() {
		return
	}

	// Node 5 (not the owner) forges an event on the owner's topic: its
	// neighbours (the owner, node 4) reject it, nobody delivers it.
	forger, err := nodes[5].ps.Join(topic)
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	time.Sleep(300 * time.Millisecond) // node 5's subscription reaches its neighbours
	if err := forger.Publish(ctx, eventData(t, td.ID, "tick", 666, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); nodes[0].rejects.count()+nodes[4].rejects.count() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the forged event was not rejected by node 5's neighbours")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The forger's score drops with its neighbours (P4).
	for deadline := time.Now().Add(5 * time.Second); nodes[0].score(nodes[5].h.ID()) >= 0 && nodes[4].score(nodes[5].h.ID()) >= 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the forger's score did not drop: %v, %v", nodes[0].score(nodes[5].h.ID()), nodes[4].score(nodes[5].h.ID()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	after, _ := lmosproto.ValueOf(1000)
	sensor.Emit("tick", after)
	for i, ch := range ticks {
		if m := recv(t, ch, fmt.Sprintf("node %d after the forgery", i)); !m.Data.Equal(after) {
			t.Errorf("node %d received %s, want the owner's %s", i, m.Data, after)
		}
	}

	// Unsubscribing the last local subscriber leaves the topic.
	if !slices.Contains(nodes[1].ps.GetTopics(), topic) {
		t.Fatalf("node 1 is not subscribed to %s", topic)
	}
	cancels[1]()
	cancels[1]()
	if _, ok := <-ticks[1]; ok {
		t.Error("node 1: channel open after cancel")
	}
	if slices.Contains(nodes[1].ps.GetTopics(), topic) {
		t.Errorf("node 1 still subscribed to %s after its last subscriber left", topic)
	}
	subs[1].mu.Lock()
	joined := len(subs[1].topics)
	subs[1].mu.Unlock()
	if joined != 0 {
		t.Errorf("node 1 still holds %d topics", joined)
	}
	// Node 3's session ends with Send(unsubscribeEvent).
	if err := session.Send(ctx, &lmosproto.Message{Type: lmosproto.MsgUnsubscribeEvent}); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ticks[3]; ok {
		t.Error("node 3: session open after unsubscribeEvent")
	}
	if slices.Contains(nodes[3].ps.GetTopics(), topic) {
		t.Errorf("node 3 still subscribed to %s", topic)
	}

	// Closing a Fanout ends its subscriptions with a 503.
	if err := subs[2].Close(); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, ticks[2], "node 2 at close"); m.Type != lmosproto.MsgError || m.Status != "503" {
		t.Errorf("node 2 at close: %v %s", m.Type, m.Status)
	}
	if _, ok := <-ticks[2]; ok {
		t.Error("node 2: channel open after Close")
	}
	if err := pub.Unpublish(td.ID); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(nodes[0].ps.GetTopics(), topic) {
		t.Errorf("owner still on %s after Unpublish", topic)
	}
}
