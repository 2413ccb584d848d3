package node

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/datastore"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/version"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func TestTwoNodesConnect(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport int // multiaddr protocol code that must appear in the dialled address
	}{
		{"tcp", ma.P_TCP},
		{"quic", ma.P_QUIC_V1},
		{"ws", ma.P_WS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startNode(t, testConfig(t))
			b := startNode(t, testConfig(t))

			var addrs []ma.Multiaddr
			for _, m := range b.Host().Addrs() {
				if _, err := m.ValueForProtocol(tc.transport); err == nil && (tc.transport == ma.P_WS || !hasProto(m, ma.P_WS)) {
					addrs = append(addrs, m)
				}
			}
			if len(addrs) == 0 {
				t.Fatalf("b has no %s address among %v", tc.name, b.Host().Addrs())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := a.Host().Connect(ctx, peer.AddrInfo{ID: b.PeerID(), Addrs: addrs}); err != nil {
				t.Fatalf("connect a→b over %s: %v", tc.name, err)
			}
			if got := a.Host().Network().Connectedness(b.PeerID()); got != network.Connected {
				t.Fatalf("a→b connectedness = %v, want Connected", got)
			}
			// b sees a too, authenticated as a's peer ID.
			deadline := time.Now().Add(5 * time.Second)
			for b.Host().Network().Connectedness(a.PeerID()) != network.Connected {
				if time.Now().After(deadline) {
					t.Fatal("b never saw the connection from a")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func hasProto(m ma.Multiaddr, code int) bool {
	_, err := m.ValueForProtocol(code)
	return err == nil
}

func TestAddrsCarryPeerID(t *testing.T) {
	n := startNode(t, testConfig(t))
	addrs := n.Addrs()
	if len(addrs) != 3 {
		t.Fatalf("Addrs() = %v, want 3 (tcp, quic, ws)", addrs)
	}
	for _, a := range addrs {
		info, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if info.ID != n.PeerID() {
			t.Errorf("%s: peer %s, want %s", a, info.ID, n.PeerID())
		}
		if ip, _ := a.ValueForProtocol(ma.P_IP4); ip != "127.0.0.1" {
			t.Errorf("%s: not on 127.0.0.1", a)
		}
	}
	if !strings.HasPrefix(n.DIDKey(), "did:key:z6Mk") {
		t.Errorf("DIDKey() = %q, want did:key:z6Mk…", n.DIDKey())
	}
}

func TestCloseIdempotentAndConcurrent(t *testing.T) {
	n, err := New(testConfig(t), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = n.Close() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Close #%d: %v", i, err)
		}
	}
	if err := n.Close(); err != nil {
		t.Errorf("Close after close: %v", err)
	}
	if err := n.Start(context.Background()); err == nil {
		t.Error("Start after Close succeeded, want an error")
	}
}

func TestCloseWithoutStart(t *testing.T) {
	n, err := New(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStartTwice(t *testing.T) {
	n := startNode(t, testConfig(t))
	if err := n.Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded, want an error")
	}
}

func TestStartFailsOnBusyAPIPort(t *testing.T) {
	a := startNode(t, testConfig(t))
	cfg := testConfig(t)
	cfg.API = a.APIAddr()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "api") {
		t.Errorf("Start on a busy API port: err = %v, want an error naming the api", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close after failed Start: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Home, homedir.APIFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("api file after failed start and Close: %v, want none", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	cfg := testConfig(t)
	cfg.DHTMode = "sometimes"
	_, err := New(cfg)
	if err == nil || !strings.Contains(err.Error(), "dhtMode") {
		t.Fatalf("New with bad dhtMode: err = %v, want one naming dhtMode", err)
	}
}

func TestSecondNodeOnSameHomeFails(t *testing.T) {
	cfg := testConfig(t)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if b, err := New(cfg); err == nil {
		b.Close()
		t.Fatal("second node on the same home: New succeeded, want an error")
	} else if !errors.Is(err, datastore.ErrLocked) || !strings.Contains(err.Error(), "another lmosnode runs with this home") {
		t.Errorf("err = %v, want datastore.ErrLocked naming the cause", err)
	} else if ne := net.Error(nil); errors.As(err, &ne) {
		t.Errorf("err = %v carries a net.Error (%T): the CLI would report a timeout", err, ne)
	}
}

func TestAPINode(t *testing.T) {
	n := startNode(t, testConfig(t))
	base := "http://" + n.APIAddr()

	resp, err := http.Get(base + "/api/v1/node")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"peerID", "didKey", "addrs", "version", "apiURL"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("response lacks %q: %v", k, raw)
		}
	}

	info, err := apiclient.New(base, nil).Node(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.PeerID != n.PeerID().String() || info.DIDKey != n.DIDKey() || info.APIURL != base || info.Version != version.Version {
		t.Errorf("info = %+v", info)
	}
	if len(info.Addrs) != 3 {
		t.Errorf("addrs = %v, want 3", info.Addrs)
	}
}

func TestAPIProblems(t *testing.T) {
	n := startNode(t, testConfig(t))
	base := "http://" + n.APIAddr()
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/api/v1/nope", http.StatusNotFound, ""},
		{http.MethodGet, "/nope", http.StatusNotFound, ""}, // "/" is the web console
		{http.MethodPost, "/api/v1/node", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodDelete, "/api/v1/node", http.StatusMethodNotAllowed, "GET, HEAD"},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, base+tc.path, nil)
			// A write needs the token before the route answers.
			req.Header.Set("Authorization", "Bearer "+n.APIToken())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q, want application/problem+json", ct)
			}
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			var p lmosproto.Problem
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
				t.Fatal(err)
			}
			if p.Status != tc.status || p.Title != http.StatusText(tc.status) || p.Instance != tc.path {
				t.Errorf("problem %+v", p)
			}
		})
	}

	t.Run("rebinding host", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/node", nil)
		req.Host = "evil.example:80"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("Host evil.example: %s %s, want a 403 problem", resp.Status, resp.Header.Get("Content-Type"))
		}
		req.Host = "localhost"
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Host localhost: %s, want 200", resp.Status)
		}
	})

	_, err := apiclient.New(base+"/nope", nil).Node(context.Background())
	var p *lmosproto.Problem
	if !errors.As(err, &p) || p.Status != http.StatusNotFound {
		t.Errorf("Node on a bad base: err = %v, want a 404 *proto.Problem", err)
	}
}

func TestAPIFileLifecycle(t *testing.T) {
	cfg := testConfig(t)
	n, err := New(cfg, WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := homedir.ReadAPIFile(cfg.Home); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("before Start: homedir.ReadAPIFile err = %v, want fs.ErrNotExist", err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := homedir.ReadAPIFile(cfg.Home)
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + n.APIAddr(); got != want {
		t.Errorf("api file = %q, want %q", got, want)
	}
	if strings.HasSuffix(got, ":0") {
		t.Errorf("api file holds port 0: %q", got)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := homedir.ReadAPIFile(cfg.Home); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close: homedir.ReadAPIFile err = %v, want fs.ErrNotExist", err)
	}
}

func TestDatastoreSurvivesRestart(t *testing.T) {
	cfg := testConfig(t)
	key := ds.NewKey("/test/survives")
	ctx := context.Background()

	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := n.PeerID()
	if err := n.Datastore().Put(ctx, key, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	n, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.PeerID() != id {
		t.Errorf("peer ID changed across restart: %s → %s", id, n.PeerID())
	}
	v, err := n.Datastore().Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if string(v) != "hello" {
		t.Errorf("value = %q, want hello", v)
	}
}
