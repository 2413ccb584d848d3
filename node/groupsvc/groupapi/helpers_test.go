package groupapi_test

import (
	"context"
	"crypto/ed25519"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"go.uber.org/goleak"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// server is one node's group API: a group service on a loopback host
// with gossipsub and an in-memory datastore, its Handler, and an HTTP
// server of the Handler's patterns.
type server struct {
	self    peer.ID
	handler *groupapi.Handler
	url     string
	client  *apiclient.Client
}

// startServer starts a server; its parts are closed when the test (or
// example) ends, through cleanup.
func startServer(cleanup func(func())) (*server, error) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	priv, err := crypto.UnmarshalEd25519PrivateKey(key)
	if err != nil {
		return nil, err
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		return nil, err
	}
	cleanup(func() { _ = h.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	cleanup(cancel)
	svc, err := groupsvc.New(groupsvc.Deps{Host: h, Key: key, Datastore: dssync.MutexWrap(ds.NewMapDatastore())}, groupsvc.Config{})
	if err != nil {
		return nil, err
	}
	ps, err := pubsub.NewGossipSub(ctx, h, pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithPeerFilter(svc.PeerFilter), pubsub.WithSubscriptionFilter(svc.SubscriptionFilter()))
	if err != nil {
		return nil, err
	}
	if err := svc.Start(context.Background(), ps); err != nil {
		return nil, err
	}
	cleanup(func() { _ = svc.Close() })
	handler, err := groupapi.New(groupapi.Deps{Groups: svc})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	for _, p := range groupapi.Patterns() {
		mux.Handle(p, handler)
	}
	srv := httptest.NewServer(mux)
	cleanup(srv.Close)
	cleanup(func() { _ = handler.Close() })
	return &server{self: h.ID(), handler: handler, url: srv.URL, client: apiclient.New(srv.URL, nil)}, nil
}

// newServer is startServer for a test.
func newServer(t *testing.T) *server {
	t.Helper()
	s, err := startServer(t.Cleanup)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// send sends a raw request.
func (s *server) send(t *testing.T, ctx context.Context, method, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// do sends a raw request and returns the status, the Content-Type and
// the body.
func (s *server) do(t *testing.T, method, path, body string) (int, string, []byte) {
	t.Helper()
	resp := s.send(t, context.Background(), method, path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}
