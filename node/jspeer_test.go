package node_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// jsPeerDir holds the second implementation of docs/wire.md: a js-libp2p
// peer written from the document alone, with pinned dependencies
// (package-lock.json).
var jsPeerDir = filepath.Join("..", "scripts", "interop", "jspeer")

// jsPeerCmd prepares scripts/interop/jspeer (testnet.NPM) and returns the
// command that runs the peer with request req (see peer.mjs), bounded by
// ctx.
func jsPeerCmd(t *testing.T, ctx context.Context, req map[string]any) *exec.Cmd {
	t.Helper()
	testnet.NPM(t, jsPeerDir)
	arg, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", "peer.mjs", string(arg))
	cmd.Dir = jsPeerDir
	return cmd
}

// jsPeerRun runs the peer to completion and decodes its one result line
// into v; it returns the peer's standard error and whether it succeeded.
func jsPeerRun(t *testing.T, req map[string]any, v any) (stderr string, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := jsPeerCmd(t, ctx, req)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("node peer.mjs: %v\n%s", err, errb.Bytes())
	}
	if err == nil {
		if jerr := json.Unmarshal(out.Bytes(), v); jerr != nil {
			t.Fatalf("peer.mjs printed %q: %v", out.Bytes(), jerr)
		}
	}
	return errb.String(), err == nil
}

// jsPeerProc is a peer that runs while the test talks to it: it reads
// lines on standard input, prints JSON lines.
type jsPeerProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncBuffer
	exited chan struct{} // closed when the process has exited, with err set
	err    error
}

// syncBuffer is a bytes.Buffer the test may read while the process
// writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func jsPeerStart(t *testing.T, req map[string]any) *jsPeerProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := jsPeerCmd(t, ctx, req)
	p := &jsPeerProc{t: t, cmd: cmd, lines: make(chan []byte, 8), stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var read sync.WaitGroup
	read.Go(func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<16), 4<<20)
		for sc.Scan() {
			p.lines <- slices.Clone(sc.Bytes())
		}
		close(p.lines)
	})
	go func() {
		read.Wait() // stdout fully read before Wait closes the pipe
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close()
		<-p.exited
		if p.err != nil {
			t.Logf("the JS peer exited: %v\n%s", p.err, p.stderr)
		}
	})
	return p
}

// next decodes the peer's next line into v, failing the test if the peer
// exits or stays silent for 30 s.
func (p *jsPeerProc) next(v any) {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.exited
			p.t.Fatalf("the JS peer exited: %v\n%s", p.err, p.stderr)
		}
		if err := json.Unmarshal(line, v); err != nil {
			p.t.Fatalf("JS peer printed %q: %v", line, err)
		}
	case <-time.After(30 * time.Second):
		p.t.Fatalf("the JS peer said nothing for 30 s\n%s", p.stderr)
	}
}

// wait waits for the peer to exit by itself and returns its exit error.
func (p *jsPeerProc) wait() error {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(30 * time.Second):
		p.t.Fatalf("the JS peer did not exit within 30 s\n%s", p.stderr)
		return nil
	}
}

// send writes one JSON line to the peer.
func (p *jsPeerProc) send(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// checkRecord verifies raw as every Go node does a record of (publisher,
// id) from the DHT.
func checkRecord(t *testing.T, raw []byte, publisher peer.ID, id string) *lmosproto.Record {
	t.Helper()
	rec, err := lmosdht.ThingValidator{}.Check(lmosdht.ThingKey(publisher, id), raw)
	if err != nil {
		t.Fatalf("record of %s by %s does not verify: %v\n%s", id, publisher, err, raw)
	}
	return rec
}

// (a) The JS peer reads a Go node's TD record and the providers of one of
// its capabilities from the DHT (/lmos/kad/1.0.0, key and CID as
// docs/wire.md defines them), through a Go node other than the publisher
// too, and verifies the record's proof and publisher by itself.
func TestJSPeerReadsDHT(t *testing.T) {
	net := testnet.New(t, 2, testnet.Options{})
	net.Link(0, 1)
	pub := net.Nodes[0]
	id := testnet.UniqueID(t)
	capability := "js-interop-" + id[len(id)-6:]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, _, err := pub.Federation().Publish(ctx, testnet.TD(t, id, "Read by JS", capability), &directory.Local{Backend: "http://127.0.0.1:1/x"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.Raw()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Record    string   `json:"record"`
		Seq       uint64   `json:"seq"`
		Title     string   `json:"title"`
		CID       string   `json:"cid"`
		Providers []string `json:"providers"`
	}
	stderr, ok := jsPeerRun(t, map[string]any{
		"mode": "read", "peers": append(p2pAddrs(net.Nodes[1]), p2pAddrs(pub)...),
		"publisher": pub.PeerID().String(), "id": id, "capability": capability,
	}, &got)
	if !ok {
		t.Fatalf("the JS peer failed:\n%s", stderr)
	}
	raw, err := base64.StdEncoding.DecodeString(got.Record)
	if err != nil {
		t.Fatal(err)
	}
	// The publisher may have re-signed the record at the same seq since
	// (it does when its first announcement reached no topic peer, so that
	// the republication is a new gossipsub message): either version is
	// the publisher's.
	if !bytes.Equal(raw, want) {
		cur, ok := pub.Directory().Get(pub.PeerID(), id)
		now, err := cur.Raw()
		if !ok || err != nil || !bytes.Equal(raw, now) {
			t.Fatalf("the JS peer read\n%s\nfrom the DHT; the publisher signed\n%s\nand holds\n%s", raw, want, now)
		}
	}
	if got.Seq != 1 || got.Title != "Read by JS" {
		t.Errorf("the JS peer read seq %d, title %q; want 1, %q", got.Seq, got.Title, "Read by JS")
	}
	wantCID := lmosdht.CapabilityCID(capability)
	if got.CID != wantCID.String() {
		t.Errorf("the JS peer's capability CID %s; the Go node's %s", got.CID, wantCID)
	}
	if !slices.Contains(got.Providers, pub.PeerID().String()) {
		t.Errorf("providers of %s seen by the JS peer: %v; want the publisher %s", capability, got.Providers, pub.PeerID())
	}
}

// (c) The JS peer signs its own TD with its Ed25519 libp2p key
// (eddsa-jcs-2022, lmos:seq) and announces it on /lmos/1/announce; the Go
// nodes verify and store it, and a Go node's directory API serves it,
// byte for byte, to GET /things/{id}?publisher=<JS peer>.
func TestJSPeerPublishes(t *testing.T) {
	net := testnet.New(t, 2, testnet.Options{})
	net.Link(0, 1)
	id := testnet.UniqueID(t)
	p := jsPeerStart(t, map[string]any{
		"mode": "publish", "peers": p2pAddrs(net.Nodes[0]),
		"id": id, "title": "Published by JS", "capability": "js-published",
	})
	var got struct {
		Peer        string   `json:"peer"`
		Record      string   `json:"record"`
		SentTo      []string `json:"sentTo"`
		SentAgainTo []string `json:"sentAgainTo"`
		PutTo       []string `json:"putTo"`
	}
	p.next(&got)
	t.Logf("the JS peer sent its announcement to %v, again to %v", got.SentTo, got.SentAgainTo)
	jsID, err := peer.Decode(got.Peer)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := base64.StdEncoding.DecodeString(got.Record)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, signed, jsID, id)
	// Node 1 is not connected to the JS peer: the record reaches it
	// through node 0's gossip.
	testnet.WaitFor(t, "both Go nodes hold the JS peer's Thing", 15*time.Second, testnet.All(net.Nodes, has(jsID, id, 1, false)))
	u := "http://" + net.Nodes[1].APIAddr() + "/things/" + url.PathEscape(id) + "?publisher=" + jsID.String()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v\n%s", u, resp.StatusCode, err, body)
	}
	rec := checkRecord(t, body, jsID, id)
	if rec.TD.Title != "Published by JS" || rec.Seq != 1 {
		t.Errorf("served: title %q, seq %d", rec.TD.Title, rec.Seq)
	}
	if !bytes.Equal(body, signed) {
		t.Errorf("GET %s served other bytes than the JS peer signed:\n%s\nsigned:\n%s", u, body, signed)
	}
	// The JS peer also put the record in the DHT (Go nodes never put
	// another publisher's record): a Go node's DHT returns it.
	if len(got.PutTo) == 0 {
		t.Fatal("the JS peer's DHT put reached no Go node")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := net.Nodes[1].DHT().GetValue(ctx, lmosdht.ThingKey(jsID, id))
	if err != nil || !bytes.Equal(v, signed) {
		t.Errorf("the Go node's DHT holds %q (%v) under the JS peer's key; want the signed record (put to %v)", v, err, got.PutTo)
	}
}

// (b) The JS peer subscribes to /lmos/1/announce only after a Go node
// announced a Thing, connected to a Go relay alone (never to the
// publisher), as a subscriber that never joins a mesh, so the record can
// reach it only through gossip repair: the relay's IHAVE, its IWANT, the
// relay's answer. The peer then checks that the ID it derives for what
// arrived is the one the relay advertised: with docs/wire.md's message ID
// it is; with js-libp2p's default (author and seqno) it is not, and the
// peer would ask for the message again at every IHAVE and break the
// relay's IWANT promises.
func TestJSPeerGossipRepair(t *testing.T) {
	for _, c := range []struct {
		msgid string
		ok    bool
	}{
		{"lmos", true},
		// The negative control: the library's default message ID.
		{"default", false},
	} {
		t.Run("msgid="+c.msgid, func(t *testing.T) {
			net := testnet.New(t, 2, testnet.Options{})
			pub, relay := net.Nodes[0], net.Nodes[1]
			net.Link(0, 1)
			testnet.WaitFor(t, "publisher and relay see each other on the announce topic", 15*time.Second, func() (bool, string) {
				return len(pub.PubSub().ListPeers(lmosproto.TopicAnnounce)) > 0 && len(relay.PubSub().ListPeers(lmosproto.TopicAnnounce)) > 0, ""
			})
			p := jsPeerStart(t, map[string]any{"mode": "late", "msgid": c.msgid})
			var hello struct {
				Peer string `json:"peer"`
			}
			p.next(&hello)

			id := testnet.UniqueID(t)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			e, _, err := pub.Federation().Publish(ctx, testnet.TD(t, id, "Repaired", "js-late"), nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.Raw()
			if err != nil {
				t.Fatal(err)
			}
			testnet.WaitFor(t, "the relay holds the Thing", 10*time.Second, testnet.All([]*node.Node{relay}, has(pub.PeerID(), id, 1, false)))
			// Only now does the JS peer meet the relay and subscribe; the
			// relay keeps advertising the announcement for three heartbeats
			// (gossipsub's gossip window, 1 s each).
			p.send(map[string]string{"relay": p2pAddrs(relay)[0]})

			var got struct {
				Record     string   `json:"record"`
				From       string   `json:"from"`
				RouterID   string   `json:"routerID"`
				ContentID  string   `json:"contentID"`
				Advertised []string `json:"advertised"`
				Connected  []string `json:"connected"`
			}
			p.next(&got)
			raw, err := base64.StdEncoding.DecodeString(got.Record)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, want) || got.From != pub.PeerID().String() {
				t.Fatalf("the JS peer got %s from %s; want the publisher's record\n%s", raw, got.From, want)
			}
			sum := sha256.Sum256(want)
			if got.ContentID != hex.EncodeToString(sum[:]) || !slices.Contains(got.Advertised, got.ContentID) {
				t.Errorf("the relay advertised %v; the record's docs/wire.md ID is %x, the JS peer computed %s", got.Advertised, sum, got.ContentID)
			}
			if slices.Contains(got.Connected, pub.PeerID().String()) {
				t.Errorf("the JS peer was connected to the publisher: %v", got.Connected)
			}
			err = p.wait()
			switch {
			case c.ok && err != nil:
				t.Fatalf("the JS peer failed: %v\n%s", err, p.stderr)
			case !c.ok && err == nil:
				t.Fatalf("with the library's default message ID, the JS peer named the record %s, and the relay advertised %v: the IDs should differ", got.RouterID, got.Advertised)
			case !c.ok && !strings.Contains(p.stderr.String(), "never advertised"):
				t.Fatalf("the JS peer failed otherwise than by a message ID mismatch: %v\n%s", err, p.stderr)
			}
		})
	}
}

// The JS peer's wire functions, written from docs/wire.md, agree with the
// Go code on the document's examples: the example record's proof (and a
// tampered copy's failure), its announce message ID, a group message ID,
// provider CIDs and DHT keys, one with bytes the two escapes treat apart.
func TestJSPeerWireExamples(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "proto", "testdata", "golden", "proof", "td-agent.secured.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden = bytes.TrimSuffix(golden, []byte("\n"))
	const publisher = "12D3KooWA4Xop1JaT3MHxwYMkCepYsv4iPVopMXwCz5iHYdBfeSB"
	pid, err := peer.Decode(publisher)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		AnnounceID    string   `json:"announceID"`
		Verified      any      `json:"verified"`
		GroupID       string   `json:"groupID"`
		CapabilityCID string   `json:"capabilityCID"`
		TypeCID       string   `json:"typeCID"`
		Keys          []string `json:"keys"`
	}
	run := func(raw []byte) result {
		var r result
		stderr, ok := jsPeerRun(t, map[string]any{
			"mode": "examples", "record": base64.StdEncoding.EncodeToString(raw),
			"publisher": publisher, "at": "2026-11-21T11:00:00Z",
		}, &r)
		if !ok {
			t.Fatalf("the JS peer failed:\n%s", stderr)
		}
		return r
	}
	got := run(golden)
	announce := sha256.Sum256(golden)
	group := sha256.Sum256([]byte("/lmos/1/group/bafkreiexample\x00" + `{"post":{"body":"hi","sent":"2026-11-21T10:00:00Z"}}`))
	want := result{
		AnnounceID:    hex.EncodeToString(announce[:]),
		Verified:      true,
		GroupID:       hex.EncodeToString(group[:]),
		CapabilityCID: lmosdht.CapabilityCID("weather-forecast").String(),
		TypeCID:       lmosdht.TypeCID(lmosproto.TypeAgent).String(),
		Keys: []string{
			lmosdht.ThingKey(pid, "urn:uuid:6f1d3c9e-2b4a-4c1e-9f0a-5d7e8b2c4a10"),
			lmosdht.ThingKey(pid, "https://x.example/a b"),
			lmosdht.ThingKey(pid, "urn:é$&+=@~"),
		},
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("the JS peer computed\n%s\nthe Go code\n%s", gotJSON, wantJSON)
	}
	// One changed byte in the signed document: the JS peer refuses it.
	tampered := bytes.Replace(golden, []byte("Zürich"), []byte("Zurich"), 1)
	if bytes.Equal(tampered, golden) {
		t.Fatal("the example record has no Zürich to change")
	}
	if v := run(tampered).Verified; v == true {
		t.Error("the JS peer verified a tampered record")
	}
}
