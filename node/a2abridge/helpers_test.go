package a2abridge

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	datastore "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/tdcache"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// testNode is a Bridge over a directory of its own, served on 127.0.0.1:
// what the node's A2A surface is, without the rest of the node.
type testNode struct {
	dir    *directory.Directory
	bridge *Bridge
	srv    *httptest.Server
	things dirThings
	key    ed25519.PrivateKey
	self   peer.ID
}

// dirThings resolves and parses the directory's Things the way own.Things
// does for the node (Get, then the parsed-TD cache); this test's
// Resolver refuses what the directory does not hold.
type dirThings struct {
	dir *directory.Directory
	tds *tdcache.Cache
	// reads counts TDOf calls: what rendering cards costs.
	reads *atomic.Int64
}

func (d dirThings) Resolve(_ context.Context, id string, pub peer.ID, _ bool) (directory.Entry, error) {
	e, ok := d.dir.Get(pub, id)
	if !ok || e.Tombstone {
		return e, &lmosproto.Problem{Status: http.StatusNotFound, Detail: fmt.Sprintf("no Thing %q of %s", id, pub)}
	}
	return e, nil
}

func (d dirThings) TDOf(pub peer.ID, id string) (*lmosproto.TD, bool) {
	d.reads.Add(1)
	e, ok := d.dir.Get(pub, id)
	if !ok {
		return nil, false
	}
	td, err := d.tds.TD(e)
	return td, err == nil
}

// noCalls is the Invokers and Publisher of a test that reads cards only.
type noCalls struct{}

func (noCalls) For(peer.ID) interact.Invoker { return nil }

func (noCalls) Publish(context.Context, *lmosproto.TD, *directory.Local) (directory.Entry, directory.Change, error) {
	return directory.Entry{}, 0, errors.New("this test publishes nothing")
}

func newTestNode(tb testing.TB) *testNode {
	tb.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	self, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(datastore.NewMapDatastore()), Self: self}, directory.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = dir.Close() })
	things := dirThings{dir: dir, tds: tdcache.New(0), reads: &atomic.Int64{}}
	client, err := NewClient(ClientConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := New(Deps{Directory: dir, Visible: func(directory.Entry) bool { return true }, Resolver: things, TDs: things,
		Self: self, Invokers: noCalls{}, Key: key, Publisher: noCalls{}, Client: client}, Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	srv := httptest.NewServer(b)
	tb.Cleanup(srv.Close)
	return &testNode{dir: dir, bridge: b, srv: srv, things: things, key: key, self: self}
}

// sybilAgents puts agents of n identities into the directory, per
// identity perKey agents whose descriptions are desc bytes long: what a
// sybil run leaves on a node. It returns the identities.
func (tn *testNode) sybilAgents(tb testing.TB, n, perKey, desc int) []peer.ID {
	tb.Helper()
	now := time.Now()
	var pubs []peer.ID
	for i := range n {
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		pub, _ := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
		pubs = append(pubs, pub)
		var recs []*lmosproto.Record
		for j := range perKey {
			td := agentTD(tb, fmt.Sprintf("urn:sybil:%d:%d", i, j), fmt.Sprintf("Sybil %d/%d", i, j), strings.Repeat("all the weather you want ", desc/25+1)[:desc])
			rec, err := lmosproto.SignThing(td, key, now)
			if err != nil {
				tb.Fatal(err)
			}
			recs = append(recs, rec)
		}
		if _, err := tn.dir.PutMany(recs); err != nil {
			tb.Fatal(err)
		}
	}
	return pubs
}

// ownAgent publishes an agent of the node itself.
func (tn *testNode) ownAgent(tb testing.TB, id, title string) {
	tb.Helper()
	td := agentTD(tb, id, title, "The node's own agent "+title)
	td.Seq = uint64(time.Now().UnixNano()) // a new version of id replaces the one before
	rec, err := lmosproto.SignThing(td, tn.key, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tn.dir.Put(rec, &directory.Local{Backend: "http://127.0.0.1:1"}); err != nil {
		tb.Fatal(err)
	}
}

// agentTD is an lmos:Agent with one action and one capability.
func agentTD(tb testing.TB, id, title, desc string) *lmosproto.TD {
	tb.Helper()
	raw := fmt.Sprintf(`{"@context":["https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://eclipse.dev/lmos/protocol/v1"}],
"@type":"lmos:Agent","id":%q,"title":%q,"description":%q,"securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc",
"lmos:capabilities":[{"lmos:id":"weather-forecast","lmos:version":"1.0.0","lmos:examples":["Rain in Bonn tomorrow?"]}],
"actions":{"chat":{"forms":[{"href":"http://127.0.0.1:1/chat"}]}}}`, id, title, desc)
	td, err := lmosproto.ParseTD([]byte(raw))
	if err != nil {
		tb.Fatal(err)
	}
	return td
}
