package node_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/routing"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The API limits of the suite's nodes: short, so that slow clients are cut
// within the test.
const (
	advTimeout   = 300 * time.Millisecond
	advPerClient = 30
	// advHeapBound and advFDSlack are the generous bounds on what an
	// attack may leave behind in the process (all nodes and attackers
	// share it) once its attacker is closed: live heap after a
	// collection, open file descriptors.
	advHeapBound = 32 << 20
	advFDSlack   = 32
)

// TestAdversarial is the standing adversarial suite (docs/security.md):
// hostile raw libp2p peers and hostile HTTP clients attack a federation of
// three honest nodes on loopback. Each attack counts its tries and how many
// were refused, checks that no honest node's directory records (byte for
// byte) or group state changed, and measures what it cost the process
// (live heap, RSS, file descriptors, goroutines). With -v the test logs
// the table of docs/security.md.
func TestAdversarial(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	s := newAdvSuite(t)
	for _, a := range []struct {
		name    string
		prepare func(t *testing.T)
		attack  func(t *testing.T) advCount
	}{
		{"forged signature", nil, s.forged},
		{"re-signed by another key (id takeover)", nil, s.resigned},
		{"replayed older seq", nil, s.replayed},
		{"forged and replayed DHT puts", nil, s.dhtPuts},
		{"oversized record", nil, s.oversized},
		{"malformed frames and messages", nil, s.malformed},
		{"eclipse by one local record", nil, s.eclipse},
		{"look-alike, no trust list", s.lookAlikePeer, s.lookAlike},
		{"look-alike, trust list", nil, s.lookAlikeTrusted},
		{"group-log scraping", nil, s.scrape},
		{"token reuse after removal", s.removeMember, s.reuseToken},
		{"spam within quota", nil, s.spamWithin},
		{"spam beyond quota", nil, s.spamBeyond},
		{"slow request bodies", nil, s.slowBodies},
		{"slow request headers", nil, s.slowHeaders},
		{"too many connections from one client", nil, s.tooManyConns},
		{"oversized headers", nil, s.bigHeaders},
		{"oversized bodies", nil, s.bigBodies},
		{"admin requests without the token", nil, s.noToken},
		{"calls and acts from a web page (CSRF)", s.consentThing, s.noConsent},
		{"callers that leave (hanging backend)", s.hangPrepare, s.leavers},
		{"text rewritten or not UTF-8, on every write route", nil, s.badText},
		{"oversized WebSocket frame headers", nil, s.wsFrames},
	} {
		if a.prepare != nil {
			a.prepare(t)
		}
		s.run(t, a.name, a.attack)
	}
	s.honestAgree(t)

	var b strings.Builder
	b.WriteString("\n| attack | tries | refused | honest data changed | resource effect |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range s.rows {
		fmt.Fprintf(&b, "| %s | %d | %d%s | %s | %s |\n", r.attack, r.tries, r.refused, r.how, r.changed, r.effect)
	}
	t.Log(b.String())
}

// advCount is what an attack reports: how many tries, how many refused,
// and how (a note for the table).
type advCount struct {
	tries, refused int
	how            string
}

type advRow struct {
	attack          string
	tries, refused  int
	how             string
	changed, effect string
}

// advSuite is the honest federation under attack.
type advSuite struct {
	nodes   []*node.Node
	tracers []*testnet.Tracer
	// ids are the honest Things, one per node; node 0's is at seq 2,
	// first is its seq 1.
	ids   []string
	first []byte
	// second is node 0's seq 2 as it went into the DHT. Node 0 may
	// re-sign it later (a peer new on the announce topic catches up:
	// federation's catchUp), the DHT keeps it.
	second []byte
	// gid is node 0's group, leaky the multi-use invitation node 1 joined
	// with.
	gid, leaky string
	// impostor publishes a look-alike of node 0's Thing.
	impostor *hostile
	// door is an lmos:Agent of node 1 with an action "open" whose calls
	// opened counts (consentThing).
	door   string
	opened atomic.Int64
	// hang serves node 0's Thing hangID, whose action never answers.
	hang   *advHangBackend
	hangID string
	rows   []advRow
}

func newAdvSuite(t *testing.T) *advSuite {
	s := &advSuite{tracers: []*testnet.Tracer{{}, {}, {}}}
	net := testnet.New(t, len(s.tracers), testnet.Options{
		Configure: func(_ int, cfg *config.Config) {
			cfg.Quota = spamQuotaConfig
			cfg.Resources.MaxPeerInteractions = advPeerInteractions
			cfg.APILimits = config.APILimits{ReadHeaderTimeout: config.Duration(advTimeout), BodyTimeout: config.Duration(advTimeout),
				MaxConnsPerClient: advPerClient, LimitLoopback: true}
		},
		NodeOptions: func(i int) []node.Option {
			return []node.Option{node.WithGossipHeartbeat(200 * time.Millisecond), node.WithPubSubTracer(s.tracers[i])}
		},
	})
	net.Link(1, 0)
	net.Link(2, 0)
	net.Link(2, 1)
	s.nodes = net.Nodes
	testnet.WaitFor(t, "every node sees two topic peers", waitLong, testnet.OnAnnounceTopic(s.nodes, 2))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, n := range s.nodes {
		id := testnet.UniqueID(t)
		s.ids = append(s.ids, id)
		e, _, err := n.Federation().Publish(ctx, testnet.TD(t, id, "Weather", "weather-forecast"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if s.first, err = e.Raw(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := n.Federation().Publish(ctx, testnet.TD(t, id, "Weather v2", "weather-forecast"), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, n := range s.nodes {
		seq := uint64(1)
		if i == 0 {
			seq = 2
		}
		testnet.WaitFor(t, fmt.Sprintf("node %d's Thing on every node", i), waitLong, testnet.All(s.nodes, has(n.PeerID(), s.ids[i], seq, false)))
	}
	// The DHT put follows the gossip round (federation's dhtSettle): the
	// hostile DHT puts below start once node 0's seq 2 is in the DHT.
	key := lmosdht.ThingKey(s.nodes[0].PeerID(), s.ids[0])
	testnet.WaitFor(t, "node 0's seq 2 in the DHT", waitLong, func() (bool, string) {
		for _, n := range s.nodes {
			if got, err := n.DHT().GetValue(t.Context(), key, routing.Offline); err == nil && bytes.Contains(got, []byte(`"Weather v2"`)) {
				s.second = got
				return true, ""
			}
		}
		return false, "no node holds it"
	})

	admin, member := s.nodes[0], s.nodes[1]
	info, err := admin.Groups().Create(ctx, "adversarial-lab", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.gid = info.ID
	// The most a scraper could hope for: a token for anyone, any number
	// of uses, valid a day.
	if s.leaky, _, err = admin.Groups().Invite(s.gid, groupsvc.InviteOptions{Uses: groupsvc.UnlimitedUses, TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if res, err := member.Groups().Join(ctx, s.leaky); err != nil || res.Pending {
		t.Fatalf("node 1 joins: %+v, %v", res, err)
	}
	testnet.WaitFor(t, "nodes 0 and 1 are the group's members", waitLong, testnet.All([]*node.Node{admin, member}, hasMembers(s.gid, admin, member)))
	return s
}

// run runs one attack as a subtest (its attackers are closed when the
// subtest ends) and records its row.
func (s *advSuite) run(t *testing.T, name string, attack func(t *testing.T) advCount) {
	t.Helper()
	before := s.snapshot(t)
	r0 := advResources()
	var c advCount
	var peak advUsage
	t.Run(name, func(t *testing.T) {
		c = attack(t)
		peak = advResources()
		if c.tries == 0 || c.refused > c.tries {
			t.Errorf("%d tries, %d refused", c.tries, c.refused)
		}
	})
	// What the attack left behind once its attackers are gone: what is
	// still queued of theirs drains.
	var r1 advUsage
	testnet.WaitFor(t, "file descriptors and heap back near where they were", waitLong, func() (bool, string) {
		r1 = advResources()
		return r1.fds <= r0.fds+advFDSlack && int64(r1.heap)-int64(r0.heap) <= advHeapBound,
			fmt.Sprintf("%d fds open, %d before; heap %d MiB, %d MiB before", r1.fds, r0.fds, r1.heap>>20, r0.heap>>20)
	})
	changed := advDiff(before, s.snapshot(t))
	if changed != "no" {
		t.Errorf("%s: honest data changed: %s", name, changed)
	}
	s.rows = append(s.rows, advRow{attack: name, tries: c.tries, refused: c.refused, how: c.how, changed: changed,
		effect: fmt.Sprintf("heap %+.1f MiB, RSS %+.0f MiB, fds %+d (peak %+d), goroutines %+d (peak %+d)",
			float64(int64(r1.heap)-int64(r0.heap))/(1<<20), float64(r1.rss-r0.rss)/(1<<20),
			r1.fds-r0.fds, peak.fds-r0.fds, r1.goroutines-r0.goroutines, peak.goroutines-r0.goroutines)})
}

// snapshot is every honest publisher's records on every honest node, as
// signed bytes without the proof, and every node's view of the group. The
// proof is left out because a publisher re-signs a record it announced a
// moment before when a peer comes onto the topic (federation's catchUp):
// an attacker's peer does, and only the publisher can sign.
func (s *advSuite) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, n := range s.nodes {
		for _, p := range s.nodes {
			res, err := n.Directory().Search(directory.Query{Publisher: p.PeerID(), ByID: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range res.Entries {
				raw, err := e.Raw()
				if err != nil {
					t.Fatal(err)
				}
				var doc map[string]json.RawMessage
				if err := json.Unmarshal(raw, &doc); err != nil {
					t.Fatal(err)
				}
				delete(doc, "proof")
				unsigned, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				out[fmt.Sprintf("node %d: %s's %s", i, p.PeerID(), e.ThingID)] = string(unsigned)
			}
		}
		if st, ok := n.Groups().State(s.gid); ok {
			members := slices.Sorted(maps.Keys(st.Members))
			out[fmt.Sprintf("node %d: group", i)] = fmt.Sprint(st.Heads, st.Ops, st.Dissolved, members)
		}
	}
	return out
}

// advDiff says what differs between two snapshots: "no", or the keys.
func advDiff(before, after map[string]string) string {
	var diff []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			diff = append(diff, k+" gone")
		} else if w != v {
			diff = append(diff, k+" changed")
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diff = append(diff, k+" new")
		}
	}
	if len(diff) == 0 {
		return "no"
	}
	slices.Sort(diff)
	return "YES: " + strings.Join(diff, "; ")
}

// advUsage is what the process holds.
type advUsage struct {
	heap            uint64
	rss             int64 // bytes; 0 where /proc is missing
	fds, goroutines int
}

func advResources() advUsage {
	u := advUsage{heap: heapInUse(), goroutines: runtime.NumGoroutine()}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		u.fds = len(fds)
	}
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				u.rss = kb << 10
			}
		}
	}
	return u
}

// waitRejected waits until the honest nodes have refused each of msgs,
// sent by from, with reason, and returns how many they refused.
func (s *advSuite) waitRejected(t *testing.T, from peer.ID, msgs [][]byte, reason string) int {
	t.Helper()
	refused := func() (int, []testnet.Verdict) {
		var all []testnet.Verdict
		for _, tr := range s.tracers {
			all = append(all, tr.RefusedFrom(from)...)
		}
		n := 0
		for _, m := range msgs {
			if slices.ContainsFunc(all, func(v testnet.Verdict) bool {
				return v.Reason == reason && v.Size == len(m) && bytes.HasPrefix(m, v.Data)
			}) {
				n++
			}
		}
		return n, all
	}
	testnet.WaitFor(t, "refusals "+reason, waitLong, func() (bool, string) {
		n, all := refused()
		return n == len(msgs), fmt.Sprintf("%d of %d refused; refusals: %s", n, len(msgs), reasons(all))
	})
	n, _ := refused()
	return n
}

// heldRaw is node 0's Thing as node 0 holds it (seq 2).
func (s *advSuite) heldRaw(t *testing.T) []byte {
	t.Helper()
	e, ok := s.nodes[0].Directory().Latest(s.nodes[0].PeerID(), s.ids[0])
	if !ok {
		t.Fatal("node 0 lost its Thing")
	}
	raw, err := e.Raw()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// gossip has a fresh hostile peer, connected to every honest node, send
// msgs and returns how many the honest nodes refused with reason.
func (s *advSuite) gossip(t *testing.T, reason string, msgs ...[]byte) advCount {
	t.Helper()
	h := newHostile(t, s.nodes...)
	for _, m := range msgs {
		h.publish(t, m)
	}
	return advCount{tries: len(msgs), refused: s.waitRejected(t, h.id, msgs, reason), how: " (gossip: rejected, sender penalised)"}
}

func (s *advSuite) forged(t *testing.T) advCount {
	held := s.heldRaw(t)
	forged := bytes.Replace(held, []byte(`"Weather v2"`), []byte(`"Evil v2"`), 1)
	if bytes.Equal(forged, held) {
		t.Fatal("test did not forge anything")
	}
	return s.gossip(t, pubsub.RejectValidationFailed, forged)
}

// resigned: node 0's Thing at a higher seq, signed by the hostile's key
// but naming node 0 as its signer; and a record node 0 did sign but never
// announced, sent as the hostile's own message.
func (s *advSuite) resigned(t *testing.T) advCount {
	owner := s.nodes[0]
	ownerPriv, err := homedir.LoadIdentity(owner.Config().Home)
	if err != nil {
		t.Fatal(err)
	}
	ownerKey, err := homedir.SigningKey(ownerPriv)
	if err != nil {
		t.Fatal(err)
	}
	td := testnet.TD(t, s.ids[0], "Weather v3", "weather-forecast")
	td.Seq = 3
	thief := newHostile(t) // only its key
	stolen, err := lmosproto.SignThing(td, thief.key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	claimed := bytes.ReplaceAll(stolen.Raw, []byte(lmosproto.DIDKey(thief.key.Public().(ed25519.PublicKey))), []byte(lmosproto.DIDKey(ownerKey.Public().(ed25519.PublicKey))))
	if bytes.Equal(claimed, stolen.Raw) {
		t.Fatal("the re-signed record does not name its signer by did:key")
	}
	unannounced, err := lmosproto.SignThing(td, ownerKey, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s.gossip(t, pubsub.RejectValidationFailed, claimed, unannounced.Raw)
}

// replayed: the hostile's own Thing at seq 2 is accepted; then its seq 1
// (rejected) and seq 2 signed earlier (not newer: ignored).
func (s *advSuite) replayed(t *testing.T) advCount {
	h := newHostile(t, s.nodes...)
	id := testnet.UniqueID(t)
	v1 := h.sign(t, id, 1, time.Now())
	v2 := h.sign(t, id, 2, time.Now())
	h.publish(t, v2.Raw)
	testnet.WaitFor(t, "the hostile's own seq 2 accepted", waitLong, testnet.All(s.nodes, has(h.id, id, 2, false)))
	older := h.sign(t, id, 2, time.Now().Add(-time.Minute))
	h.publish(t, v1.Raw)
	h.publish(t, older.Raw)
	n := s.waitRejected(t, h.id, [][]byte{v1.Raw}, pubsub.RejectValidationFailed) +
		s.waitRejected(t, h.id, [][]byte{older.Raw}, pubsub.RejectValidationIgnored)
	for i, nd := range s.nodes {
		e, _ := nd.Directory().Latest(h.id, id)
		if raw, _ := e.Raw(); !bytes.Equal(raw, v2.Raw) {
			t.Errorf("node %d holds the hostile's Thing at seq %d, not its seq 2 as first sent", i, e.Seq)
		}
	}
	return advCount{tries: 2, refused: n, how: " (older seq rejected; same seq, older proof ignored)"}
}

// dhtPuts: a hostile DHT server puts a forged record and node 0's seq 1
// under node 0's key; the honest holders keep seq 2.
func (s *advSuite) dhtPuts(t *testing.T) advCount {
	h := newHostile(t, s.nodes...)
	held := s.second
	key := lmosdht.ThingKey(s.nodes[0].PeerID(), s.ids[0])
	puts := [][]byte{bytes.Replace(held, []byte(`"Weather v2"`), []byte(`"Evil v2"`), 1), s.first}
	for _, v := range puts {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := h.dht.PutValue(ctx, key, v)
		cancel()
		t.Logf("hostile put: %v", err)
	}
	holders, refused := 0, 0
	for i, n := range s.nodes {
		got, err := n.DHT().GetValue(t.Context(), key, routing.Offline)
		if errors.Is(err, routing.ErrNotFound) {
			continue
		}
		holders++
		if err != nil || !bytes.Equal(got, held) {
			t.Errorf("node %d stores another record than node 0's seq 2 under its key: %v", i, err)
		}
	}
	if holders == 0 {
		t.Fatal("no node stores node 0's record: the test checked nothing")
	}
	for _, v := range puts {
		stored := false
		for _, n := range s.nodes {
			got, err := n.DHT().GetValue(t.Context(), key, routing.Offline)
			stored = stored || err == nil && bytes.Equal(got, v)
		}
		if !stored {
			refused++
		}
	}
	e, err := s.nodes[2].Federation().FetchThing(t.Context(), s.nodes[0].PeerID(), s.ids[0])
	if err != nil || e.Seq != 2 {
		t.Errorf("FetchThing after the attack: seq %d, %v", e.Seq, err)
	}
	return advCount{tries: len(puts), refused: refused, how: fmt.Sprintf(" (%d holders keep seq 2)", holders)}
}

func (s *advSuite) oversized(t *testing.T) advCount {
	return s.gossip(t, pubsub.RejectValidationFailed, bytes.Repeat([]byte("x"), lmosproto.MaxRecordSize+1))
}

// malformed: messages that are no records on gossip, and bad frames on
// every stream protocol of every node: a length far over the limit, not
// JSON, invalid UTF-8, a frame cut short. Each stream must end with an
// error answer or a reset, and the node must still answer a good request.
func (s *advSuite) malformed(t *testing.T) advCount {
	c := s.gossip(t, pubsub.RejectValidationFailed,
		[]byte(`{"hello":"world"}`), []byte("\xff\xfe not json"), []byte(`{"id":"urn:x:\xff","title":"bad utf-8"}`))
	h := newHostile(t, s.nodes...)
	huge := binary.AppendUvarint(nil, 1<<40)
	frame := func(p string) []byte { return append(binary.AppendUvarint(nil, uint64(len(p))), p...) }
	bad := [][]byte{
		append(huge, "{}"...),
		frame("not json"),
		frame("{\"token\":\"\xff\xfe\",\"name\":\"\xc3\"}"),
		append(binary.AppendUvarint(nil, 100), `{"token":`...),
	}
	protos := []protocol.ID{lmosproto.ProtocolSync, lmosproto.ProtocolFind, lmosproto.ProtocolInteract, groups.ProtocolJoin, groups.ProtocolSync}
	for _, n := range s.nodes {
		for _, p := range protos {
			for _, b := range bad {
				c.tries++
				ans, err := advStream(t, h, n.PeerID(), p, b)
				if err == nil && !bytes.Contains(ans, []byte(`"error"`)) {
					t.Errorf("%s on node %s answered %q to %q", p, n.PeerID(), ans, b)
					continue
				}
				c.refused++
			}
		}
		// Still serving: a good sync request.
		if ans, err := advStream(t, h, n.PeerID(), lmosproto.ProtocolSync, frame(`{"want":"own"}`)); err != nil || bytes.Contains(ans, []byte(`"error"`)) {
			t.Errorf("node %s no longer answers sync: %q, %v", n.PeerID(), ans, err)
		}
	}
	c.how = " (gossip rejected; streams: error answer or reset)"
	return c
}

// advStream sends b on a new stream of p from h to to, closes its side,
// and returns what came back until the stream ended (err: a reset).
func advStream(t *testing.T, h *hostile, to peer.ID, p protocol.ID, b []byte) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := h.host.NewStream(ctx, to, p)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := st.Write(b); err != nil {
		return nil, err
	}
	_ = st.CloseWrite()
	ans, err := io.ReadAll(io.LimitReader(st, 1<<20))
	if isNetTimeout(err) {
		t.Fatalf("%s: no answer and no reset within 20 s", p)
	}
	return ans, err
}

// eclipse (issue 24): a fresh node whose only peer is a hostile one gets
// the hostile's Thing with the honest nodes' capability by gossip before it
// first looks the capability up; the honest nodes, which provide it, are
// not connected to it and reachable through the DHT only (the hostile's
// DHT server names them as closer peers). Its first lookup must list
// their Things beside the hostile's, not the hostile's alone.
func (s *advSuite) eclipse(t *testing.T) advCount {
	fresh := lateNode(t, func(cfg *config.Config) { cfg.SyncOnConnect = false })
	h := newHostile(t, fresh)
	id := testnet.UniqueID(t)
	td := testnet.TD(t, id, "Hostile weather", "weather-forecast")
	td.Seq = 1
	rec, err := lmosproto.SignThing(td, h.key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.publish(t, rec.Raw)
	testnet.WaitFor(t, "the fresh node holds the hostile's Thing", waitLong, testnet.All([]*node.Node{fresh}, has(h.id, id, 1, false)))
	for _, n := range s.nodes {
		if err := h.host.Connect(t.Context(), peer.AddrInfo{ID: n.PeerID(), Addrs: n.Host().Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	testnet.WaitFor(t, "the hostile's DHT knows the honest nodes", waitLong, func() (bool, string) {
		for _, n := range s.nodes {
			if h.dht.RoutingTable().Find(n.PeerID()) == "" {
				return false, "an honest node is not in its routing table"
			}
		}
		return fresh.DHT().RoutingTable().Size() > 0, "the fresh node's routing table is empty"
	})
	if got := fresh.Directory().Len(); got != 1 {
		t.Fatalf("the fresh node holds %d records before its lookup, want the hostile's alone", got)
	}

	c := advCount{tries: 1, how: " (the first lookup asked the network: the 3 honest providers' Things listed beside the hostile's)"}
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	defer cancel()
	found, err := fresh.Find(ctx, "weather-forecast")
	if err != nil {
		t.Fatal(err)
	}
	got := map[peer.ID]bool{}
	for _, e := range found {
		got[e.Publisher] = true
	}
	missing := 0
	for _, n := range s.nodes {
		if !got[n.PeerID()] {
			missing++
		}
	}
	if missing > 0 || !got[h.id] {
		t.Errorf("the first lookup found the Things of %d publishers (the hostile's: %v); %d of 3 honest providers missing", len(got), got[h.id], missing)
		return c
	}
	c.refused++
	return c
}

// lookAlikePeer starts the impostor (for both look-alike attacks) and
// has it publish node 0's Thing under its own key: same id, title and
// capabilities.
func (s *advSuite) lookAlikePeer(t *testing.T) {
	s.impostor = newHostile(t, s.nodes...)
	td := testnet.TD(t, s.ids[0], "Weather v2", "weather-forecast")
	td.Seq = 2
	rec, err := lmosproto.SignThing(td, s.impostor.key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.impostor.publish(t, rec.Raw)
	testnet.WaitFor(t, "every node holds the look-alike", waitLong, testnet.All(s.nodes, has(s.impostor.id, s.ids[0], 2, false)))
}

// lookAlike: without a trust list, resolution by id is ambiguous (300,
// both candidates unknown) on every node: the impostor is not served.
func (s *advSuite) lookAlike(t *testing.T) advCount {
	c := advCount{how: " (300: ambiguous, both candidates listed with their publisher)"}
	for _, n := range s.nodes[1:] {
		c.tries++
		status, body := send(t, http.MethodGet, "http://"+n.APIAddr()+"/things/"+url.PathEscape(s.ids[0])+"/td", "", "")
		var p lmosproto.Problem
		err := json.Unmarshal(body, &p)
		if status != http.StatusMultipleChoices || err != nil || len(p.Candidates) != 2 {
			t.Errorf("node %s: %d %s, want 300 with 2 candidates", n.PeerID(), status, body)
			continue
		}
		c.refused++
	}
	return c
}

// lookAlikeTrusted: node 1 prefers node 0 (resolution goes to it), node 2
// denies the impostor (its records are dropped and it is not relayed).
func (s *advSuite) lookAlikeTrusted(t *testing.T) advCount {
	owner, preferring, denying := s.nodes[0], s.nodes[1], s.nodes[2]
	if _, err := apiclient.New("http://"+preferring.APIAddr(), httpapi.BearerClient(preferring.APIToken())).SetTrust(t.Context(), lmosproto.ShortPublisher(owner.PeerID()), "prefer"); err != nil {
		t.Fatal(err)
	}
	list, err := apiclient.New("http://"+denying.APIAddr(), httpapi.BearerClient(denying.APIToken())).SetTrust(t.Context(), s.impostor.id.String(), "deny")
	if err != nil || list.Dropped != 1 {
		t.Fatalf("deny: %+v, %v; want 1 record dropped", list, err)
	}
	c := advCount{how: " (prefer: the trusted one; deny: dropped)"}
	for _, n := range []*node.Node{preferring, denying} {
		c.tries++
		resp, err := http.Get("http://" + n.APIAddr() + "/things/" + url.PathEscape(s.ids[0]) + "/td")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("LMOS-Publisher") != owner.PeerID().String() {
			t.Errorf("node %s: %s from %s, want 200 from node 0", n.PeerID(), resp.Status, resp.Header.Get("LMOS-Publisher"))
			continue
		}
		c.refused++
	}
	if got := denying.Directory().Lookup(s.ids[0]); len(got) != 1 {
		t.Errorf("the denying node holds %d Things with node 0's id, want 1", len(got))
	}
	return c
}

// scrape: a hostile peer reads the group's log from the DHT and tries to
// join at the admin's node with everything it finds in it.
func (s *advSuite) scrape(t *testing.T) advCount {
	h := newHostile(t, s.nodes...)
	var record []byte
	testnet.WaitFor(t, "the hostile reads the log with node 1's add from the DHT", waitLong, func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		raw, err := h.dht.GetValue(ctx, groups.Key(s.gid))
		if err != nil {
			return false, err.Error()
		}
		l, err := groups.ParseLog(s.gid, raw)
		if err != nil {
			return false, err.Error()
		}
		record = raw
		return l.State().IsMember(s.nodes[1].PeerID()), "no add yet"
	})
	if bytes.Contains(record, []byte(tokenSecret(t, s.leaky))) {
		t.Fatal("the DHT log holds the token's secret")
	}
	tries := scrapeTokens(t, s.gid, record)
	return advCount{tries: len(tries), refused: joinRefused(t, t.Context(), h.host, s.nodes[0].PeerID(), tries), how: " (403/410/400: no secret in the log)"}
}

// removeMember: node 0 removes node 1 (an honest change, before the
// attack's snapshot).
func (s *advSuite) removeMember(t *testing.T) {
	admin, member := s.nodes[0], s.nodes[1]
	if _, err := admin.Groups().Remove(t.Context(), s.gid, member.PeerID()); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "node 1 removed on nodes 0 and 1", waitLong, testnet.All([]*node.Node{admin, member}, func(n *node.Node) bool {
		st, ok := n.Groups().State(s.gid)
		return ok && !st.IsMember(member.PeerID())
	}))
}

// reuseToken: the removed node 1 retries its (unlimited, unexpired)
// invitation through its node and over the raw join protocol.
func (s *advSuite) reuseToken(t *testing.T) advCount {
	admin, removed := s.nodes[0], s.nodes[1]
	c := advCount{tries: 2, how: " (403)"}
	if _, err := removed.Groups().Join(t.Context(), s.leaky); refusedWith(err, http.StatusForbidden) {
		c.refused++
	} else {
		t.Errorf("the removed member's retry: %v, want refused 403", err)
	}
	if ans := rawJoin(t, t.Context(), removed.Host(), admin.PeerID(), s.leaky); ans.Log == nil && ans.Status == http.StatusForbidden {
		c.refused++
	} else {
		t.Errorf("the removed member's raw retry: %+v, want 403", ans)
	}
	return c
}

// spamWithin: one identity publishes exactly its quota of Things; every
// node takes them all.
func (s *advSuite) spamWithin(t *testing.T) advCount {
	h := newHostile(t, s.nodes...)
	for i := range spamMaxThings {
		h.publish(t, h.sign(t, fmt.Sprintf("urn:within:%03d", i), 1, time.Now()).Raw)
	}
	testnet.WaitFor(t, "every node holds the publisher's quota", waitLong, testnet.All(s.nodes, func(n *node.Node) bool {
		things, _ := n.Directory().Usage(h.id)
		return things == spamMaxThings
	}))
	for i, tr := range s.tracers {
		if r := rejected(tr, h.id); len(r) > 0 {
			t.Errorf("node %d rejected %d records within the quota", i, len(r))
		}
	}
	return advCount{tries: spamMaxThings, refused: 0, how: " (all accepted: within the quota)"}
}

// spamBeyond: one identity publishes 1500 valid records of 32 KiB as fast
// as it can at node 0 (TestSpamQuota paces them).
func (s *advSuite) spamBeyond(t *testing.T) advCount {
	victim := s.nodes[0]
	h := newHostile(t, victim)
	// The spammer's DHT server makes it known to every node, and it floods
	// them all: each may grow by spamHeapBound.
	r := spamQuota(t, victim, s.tracers[0], h, 0, int64(len(s.nodes))*spamHeapBound)
	for i, n := range s.nodes {
		if things, b := n.Directory().Usage(h.id); things > spamMaxThings || b > spamMaxBytes {
			t.Errorf("node %d holds %d Things, %d bytes of the spammer", i, things, b)
		}
	}
	return advCount{tries: r.offered, refused: r.offered - r.held, how: fmt.Sprintf(" (%d rejected on gossip, then graylisted; node 0 holds %d = quota; heap %+d MiB during)", r.rejected, r.held, r.heapGrowth>>20)}
}

// slowBodies: requests that send their headers and trickle nothing of
// their body, on each route that reads one.
func (s *advSuite) slowBodies(t *testing.T) advCount {
	n := s.nodes[0]
	addr := n.APIAddr()
	routes := []string{"POST /api/v1/things", "PUT /things/urn:x:slow", "POST /api/v1/groups", "POST /things/urn:x:slow/actions/a"}
	const perRoute = 5
	var conns []net.Conn
	for _, route := range routes {
		method, path, _ := strings.Cut(route, " ")
		for range perRoute {
			head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"na", method, path, addr, n.APIToken())
			conns = append(conns, advDial(t, addr, head))
		}
	}
	// All cut off: the server holds none of them.
	waitAPIConns(t, n, 0)
	c := advCount{tries: len(conns), how: " (408 or 4xx, closed)"}
	for i, conn := range conns {
		got := advAnswer(t, conn)
		if !strings.HasPrefix(got, "HTTP/1.1 4") || routes[i/perRoute] == "POST /api/v1/groups" && !strings.HasPrefix(got, "HTTP/1.1 408 ") {
			t.Errorf("%s: %.40q; want a 4xx answer (408 on the groups route)", routes[i/perRoute], got)
			continue
		}
		c.refused++
	}
	return c
}

// slowHeaders: connections that never finish their headers.
func (s *advSuite) slowHeaders(t *testing.T) advCount {
	n := s.nodes[0]
	c := advCount{tries: 20, how: " (closed at readHeaderTimeout)"}
	var conns []net.Conn
	for range c.tries {
		conns = append(conns, advDial(t, n.APIAddr(), "GET /api/v1/node HTTP/1.1\r\nHost: "+n.APIAddr()+"\r\nX-Slow: a"))
	}
	waitAPIConns(t, n, 0)
	for _, conn := range conns {
		if got := advAnswer(t, conn); strings.HasPrefix(got, "HTTP/1.1 2") {
			t.Errorf("a request with unfinished headers was answered %.40q", got)
			continue
		}
		c.refused++
	}
	return c
}

// tooManyConns: one client opens more event streams than its cap; those
// over it are closed at once, unanswered.
func (s *advSuite) tooManyConns(t *testing.T) advCount {
	n := s.nodes[0]
	http.DefaultClient.CloseIdleConnections()
	waitAPIConns(t, n, 0)
	c := advCount{tries: advPerClient + 10, how: fmt.Sprintf(" (closed unanswered over the cap of %d)", advPerClient)}
	var conns []net.Conn
	for range c.tries {
		conns = append(conns, advDial(t, n.APIAddr(), "GET /events HTTP/1.1\r\nHost: "+n.APIAddr()+"\r\n\r\n"))
	}
	answered := 0
	for _, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 12)
		k, err := io.ReadFull(conn, b)
		switch {
		case k == 0 && err != nil && !isNetTimeout(err):
			c.refused++
		case string(b[:k]) == "HTTP/1.1 200":
			answered++
		default:
			t.Errorf("event stream: %q, %v", b[:k], err)
		}
	}
	if answered != advPerClient {
		t.Errorf("%d event streams answered, want the cap %d", answered, advPerClient)
	}
	waitAPIConns(t, n, advPerClient)
	return c
}

// advDial opens a connection to addr, writes head, and closes it when the
// test ends.
func advDial(t *testing.T, addr, head string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c
}

// advAnswer reads what the server sent on c until it closed it.
func advAnswer(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if isNetTimeout(err) {
		t.Fatalf("the server neither answered nor closed: %.40q", got)
	}
	return string(got)
}

func (s *advSuite) bigHeaders(t *testing.T) advCount {
	c := advCount{how: " (431)"}
	for _, size := range []int{100 << 10, 2 << 20} {
		c.tries++
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.nodes[0].APIAddr()+"/api/v1/node", nil)
		req.Header.Set("X-Big", strings.Repeat("h", size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%d-byte header: no answer: %v", size, err)
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%d-byte header: status %d, want 431", size, resp.StatusCode)
			continue
		}
		c.refused++
	}
	return c
}

// bigBodies: a 50 MB body declared and a 9 MB chunked one on the groups
// routes, a TD of twice the protocol's 64 KiB on the admin route, one just
// over it on the directory's PUT.
func (s *advSuite) bigBodies(t *testing.T) advCount {
	n := s.nodes[0]
	bigTD := func(pad int) []byte {
		big := testnet.TD(t, testnet.UniqueID(t), "Big", "big")
		big.Description = strings.Repeat("b", pad)
		td, err := json.Marshal(big)
		if err != nil {
			t.Fatal(err)
		}
		return td
	}
	td := bigTD(2 * lmosproto.MaxTDSize)
	c := advCount{how: " (413 problem)"}
	for _, tc := range []struct {
		path    string
		body    []byte
		chunked bool
	}{
		{"/api/v1/groups", make([]byte, 50<<20), false},
		{"/api/v1/groups", make([]byte, 9<<20), true},
		{"/api/v1/things", append(append([]byte(`{"td":`), td...), '}'), false},
		{"/things/urn:x:big", bigTD(lmosproto.MaxTDSize), false},
	} {
		c.tries++
		method := http.MethodPost
		if strings.HasPrefix(tc.path, "/things/") {
			method = http.MethodPut
		}
		req, _ := http.NewRequest(method, "http://"+n.APIAddr()+tc.path, bytes.NewReader(tc.body))
		if tc.chunked {
			req.ContentLength = -1
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+n.APIToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s: no answer: %v", tc.path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if p, err := httpapi.ResponseProblem(resp, body); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || p.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s (%d bytes): status %d, %.200s, %v; want a 413 problem", tc.path, len(tc.body), resp.StatusCode, body, err)
			continue
		}
		c.refused++
	}
	return c
}

// noToken: every kind of request that acts as the node, without a token
// and with a wrong one, on node 0 (the group's admin).
func (s *advSuite) noToken(t *testing.T) advCount {
	n := s.nodes[0]
	base := "http://" + n.APIAddr()
	id := url.PathEscape(s.ids[0])
	td := `{"td":{"@context":"https://www.w3.org/2022/wot/td/v1.1","id":"urn:x:evil","title":"Evil","securityDefinitions":{"n":{"scheme":"nosec"}},"security":"n"}}`
	reqs := []struct{ method, path, body string }{
		{http.MethodPost, "/api/v1/things", td},
		{http.MethodDelete, "/api/v1/things/" + id, ""},
		{http.MethodPut, "/things/" + id, td},
		{http.MethodDelete, "/things/" + id, ""},
		{http.MethodPost, "/api/v1/groups", `{"name":"evil"}`},
		{http.MethodPost, "/api/v1/groups/" + s.gid + "/invitations", `{}`},
		{http.MethodDelete, "/api/v1/groups/" + s.gid, ""},
		{http.MethodPost, "/api/v1/connect", `{"addr":"/ip4/127.0.0.1/tcp/1"}`},
		{http.MethodPut, "/api/v1/trust/" + url.PathEscape(s.nodes[1].PeerID().String()), `{"level":"deny"}`},
	}
	c := advCount{how: " (401)"}
	for _, auth := range []string{"", "Bearer " + strings.Repeat("0", 64)} {
		for _, r := range reqs {
			c.tries++
			if status, body := send(t, r.method, base+r.path, auth, r.body); status != http.StatusUnauthorized {
				t.Errorf("%s %s (auth %q): %d %.200s, want 401", r.method, r.path, auth, status, body)
				continue
			}
			c.refused++
		}
	}
	return c
}

// consentThing registers node 1's door, which every node learns.
func (s *advSuite) consentThing(t *testing.T) {
	s.door = testnet.UniqueID(t)
	td := testnet.TD(t, s.door, "Door", "door")
	td.Actions = map[string]*lmosproto.ActionAffordance{"open": {
		Input: json.RawMessage(`{"type":"string"}`), Forms: []lmosproto.Form{{Href: "https://door.invalid/open"}},
	}}
	if _, err := s.nodes[1].Register(td, interact.NewThing().OnAction("open", func(context.Context, lmosproto.Value, func(lmosproto.Value)) (lmosproto.Value, error) {
		s.opened.Add(1)
		return lmosproto.StringValue("open"), nil
	})); err != nil {
		t.Fatal(err)
	}
	s.everyNodeHolds(t, "node 1's door", s.nodes[1], s.door)
}

// everyNodeHolds waits until every honest node holds the Thing id that
// publisher published, before an attack starts (the suite compares their
// directories before and after it): by gossip, or by a sync with the
// publisher — what earlier attacks did to the gossip between the honest
// nodes is not the next attack's subject.
func (s *advSuite) everyNodeHolds(t *testing.T, what string, publisher *node.Node, id string) {
	t.Helper()
	testnet.WaitFor(t, "every node learns "+what, waitLong, func() (bool, string) {
		missing := 0
		var errs []error
		for _, n := range s.nodes {
			if len(n.Directory().Lookup(id)) > 0 {
				continue
			}
			missing++
			if _, err := n.Federation().Sync(t.Context(), publisher.PeerID(), federation.Filter{}); err != nil {
				errs = append(errs, err)
			}
		}
		return missing == 0, fmt.Sprintf("%d nodes without it (syncs with its publisher: %v)", missing, errors.Join(errs...))
	})
}

// noConsent: what a web page in the operator's browser can send to node
// 0's API without a CORS preflight, as Go requests: a foreign Origin or
// Sec-Fetch-Site (403) and bodies of text/plain, a form or no type (415),
// on the HTTP binding, A2A and MCP (calls through node 0 to node 1's
// door) and, with the token, on admin routes. The door is never opened;
// the control, the same call without Origin, opens it.
func (s *advSuite) noConsent(t *testing.T) advCount {
	n := s.nodes[0]
	base := "http://" + n.APIAddr()
	action := base + "/things/" + url.PathEscape(s.door) + "/actions/open"
	a2a := base + "/a2a/" + s.nodes[1].PeerID().String() + "/" + url.PathEscape(s.door) + "/?A2A-Version=1.0"
	rpc := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"open"}]}}}`
	const foreign = "http://127.0.0.1:1"
	ctJSON, token := "application/json", "Bearer "+n.APIToken()
	reqs := []struct {
		method, u, body string
		header          []string
		want            int
	}{
		{http.MethodPost, action, `"now"`, []string{"Origin", foreign, "Content-Type", ctJSON}, http.StatusForbidden},
		{http.MethodPost, action, `"now"`, []string{"Origin", "null", "Content-Type", ctJSON}, http.StatusForbidden},
		{http.MethodPost, action, `"now"`, []string{"Sec-Fetch-Site", "cross-site", "Content-Type", ctJSON}, http.StatusForbidden},
		{http.MethodPost, action, `"now"`, []string{"Origin", foreign, "Sec-Fetch-Site", "same-site", "Content-Type", ctJSON}, http.StatusForbidden},
		{http.MethodPost, action, `"now"`, nil, http.StatusUnsupportedMediaType},
		{http.MethodPost, action, `"now"`, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{http.MethodPost, action, `a=b`, []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{http.MethodPost, action, "--x--", []string{"Content-Type", "multipart/form-data; boundary=x"}, http.StatusUnsupportedMediaType},
		{http.MethodPost, a2a, rpc, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{http.MethodPost, a2a, rpc, []string{"Origin", foreign, "Content-Type", ctJSON}, http.StatusForbidden},
		{http.MethodPost, base + "/mcp", `{}`, []string{"Origin", foreign, "Content-Type", ctJSON}, http.StatusForbidden},
		{http.MethodPost, base + "/api/v1/groups", `{"name":"evil"}`, []string{"Origin", foreign, "Content-Type", ctJSON, "Authorization", token}, http.StatusForbidden},
		{http.MethodPut, base + "/api/v1/trust/" + url.PathEscape(s.nodes[1].PeerID().String()), `{"level":"deny"}`, []string{"Content-Type", "text/plain", "Authorization", token}, http.StatusUnsupportedMediaType},
	}
	c := advCount{how: " (403 foreign origin, 415 body a page sends without preflight; the door never opened)"}
	for _, r := range reqs {
		c.tries++
		req, err := http.NewRequest(r.method, r.u, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(r.header); i += 2 {
			req.Header.Set(r.header[i], r.header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if p, err := httpapi.ResponseProblem(resp, body); err != nil || resp.StatusCode != r.want || p.Status != r.want {
			t.Errorf("%s %s %q: %d %.200s, want a %d problem", r.method, r.u, r.header, resp.StatusCode, body, r.want)
			continue
		}
		c.refused++
	}
	if opened := s.opened.Load(); opened != 0 {
		t.Errorf("the door opened %d times", opened)
	}
	if status, body := send(t, http.MethodPost, action, "", `"now"`); status != http.StatusOK || s.opened.Load() != 1 {
		t.Errorf("the call without Origin: %d %.200s, door opened %d times; want 200, once", status, body, s.opened.Load())
	}
	return c
}

// honestAgree: through all the attacks, the honest nodes rejected nothing
// from each other but late relays of older versions (node/federation/doc.go).
func (s *advSuite) honestAgree(t *testing.T) {
	for i, tr := range s.tracers {
		for _, v := range tr.Refused() {
			if v.Reason != pubsub.RejectValidationFailed || !isNode(s.nodes, v.From) {
				continue
			}
			rec, err := lmosproto.ParseRecord(v.Data)
			if err != nil {
				t.Errorf("node %d rejected a message from honest node %s (author %s): not a record: %v", i, v.From, v.Author, err)
				continue
			}
			if held, ok := s.nodes[i].Directory().Latest(rec.Publisher(), rec.ThingID); ok && rec.Seq < held.Seq {
				continue
			}
			if things, _ := s.nodes[i].Directory().Usage(rec.Publisher()); things >= spamMaxThings {
				continue // a relay of a spammer's record over this node's quota
			}
			t.Errorf("node %d rejected %s's %q seq %d from honest node %s", i, rec.Publisher(), rec.ThingID, rec.Seq, v.From)
		}
	}
}
