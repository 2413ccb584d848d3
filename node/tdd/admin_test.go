package tdd_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func ptr[T any](v T) *T { return &v }

func TestAdminThings(t *testing.T) {
	env := tddtest.NewEnv(t)
	c := apiclient.New(env.URL, nil)
	ctx := context.Background()

	res, err := c.Publish(ctx, thing{id: "urn:a", title: "A"}.json(t), ptr("http://127.0.0.1:9000/a"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Change != "created" || res.ID != "urn:a" || res.Seq != 1 || !res.Own || res.Backend != "http://127.0.0.1:9000/a" || res.Publisher != env.Self.ID.String() {
		t.Errorf("publish: %+v", res)
	}
	if s, err := lmosproto.VerifyDocument(res.TD); err != nil || s.PeerID != env.Self.ID {
		t.Errorf("published TD: %v", err)
	}
	if !res.Registration.Created.Equal(tddtest.Epoch) || res.Registration.Expires != nil {
		t.Errorf("registration %+v", res.Registration)
	}
	// Republished without backend: the backend stays; "" clears it.
	if res, err = c.Publish(ctx, thing{id: "urn:a", title: "A2"}.json(t), nil); err != nil || res.Change != "updated" || res.Seq != 2 || res.Backend != "http://127.0.0.1:9000/a" {
		t.Errorf("republish: %+v %v", res, err)
	}
	if res, err = c.Publish(ctx, thing{id: "urn:a", title: "A3"}.json(t), ptr("")); err != nil || res.Backend != "" {
		t.Errorf("clear backend: %+v %v", res, err)
	}
	// Without id: a urn:uuid is assigned.
	anon, err := c.Publish(ctx, thing{title: "Anon"}.json(t), nil)
	if err != nil || !strings.HasPrefix(anon.ID, "urn:uuid:") {
		t.Errorf("anonymous publish: %+v %v", anon, err)
	}

	env.Learn(t, tddtest.NewIdentity(2), thing{id: "urn:l", title: "Learned"}.td(t), 1)
	own, err := c.Own(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range own {
		got = append(got, o.ID)
	}
	if !slices.Equal(got, []string{"urn:a", anon.ID}) { // by title: A3, Anon
		t.Errorf("own: %v", got)
	}

	if err := c.RemoveThing(ctx, "urn:a"); err != nil {
		t.Fatal(err)
	}
	var p *lmosproto.Problem
	if err := c.RemoveThing(ctx, "urn:a"); !errors.As(err, &p) || p.Status != http.StatusNotFound {
		t.Errorf("second remove: %v", err)
	}
	if err := c.RemoveThing(ctx, "urn:l"); !errors.As(err, &p) || p.Status != http.StatusForbidden {
		t.Errorf("remove of a learned Thing: %v", err)
	}
	if own, _ := c.Own(ctx); len(own) != 1 {
		t.Errorf("own after remove: %d", len(own))
	}
}

func TestAdminPublishInvalid(t *testing.T) {
	env := tddtest.NewEnv(t)
	bad := thing{id: "urn:a", title: "A"}.doc()
	bad["title"] = 5
	for _, tc := range []struct {
		name, body string
		fields     []string
		detail     string
	}{
		{"no td", `{}`, []string{"/td"}, "td is required"},
		{"null td", `{"td":null}`, []string{"/td"}, "td is required"},
		{"bad td", `{"td":{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":5,"security":"s","securityDefinitions":{"s":{"scheme":"nosec"}}}}`, []string{"/td/title"}, "td is not a valid"},
		{"bad backend", `{"td":` + string(thing{id: "urn:a", title: "A"}.json(t)) + `,"backend":"ftp://x"}`, []string{"/backend"}, "backend"},
		{"relative backend", `{"td":` + string(thing{id: "urn:a", title: "A"}.json(t)) + `,"backend":"/x"}`, []string{"/backend"}, "backend"},
		{"backend type", `{"td":{},"backend":5}`, []string{"/backend"}, "backend"},
		{"unknown member", `{"td":{},"beckend":"x"}`, nil, `"beckend"`},
		{"not JSON", `{`, nil, "request body"},
		{"empty", ``, nil, "empty"},
		{"trailing", `{"td":{}} {}`, nil, "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := problem(t, do(t, http.MethodPost, env.URL+"/api/v1/things", []byte(tc.body), "Content-Type", "application/json"), http.StatusBadRequest)
			if tc.fields != nil && !slices.Equal(fields(p), tc.fields) {
				t.Errorf("fields %v, want %v", fields(p), tc.fields)
			}
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, tc.detail)
			}
		})
	}
	problem(t, do(t, http.MethodPost, env.URL+"/api/v1/things", []byte(`{}`), "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
	// A TD over the size a TD may have, in a body the admin route still
	// reads whole: 413, as on PUT /things/{id}.
	big := `{"td":"` + strings.Repeat("x", lmosproto.MaxTDSize) + `"}`
	problem(t, do(t, http.MethodPost, env.URL+"/api/v1/things", []byte(big), "Content-Type", "application/json"), http.StatusRequestEntityTooLarge)
	// The client returns the problem with its fields.
	_, err := apiclient.New(env.URL, nil).Publish(context.Background(), []byte(`{"title":5}`), nil)
	var p *lmosproto.Problem
	if !errors.As(err, &p) || p.Status != http.StatusBadRequest || !strings.Contains(err.Error(), "/td/title") {
		t.Errorf("client error %v", err)
	}
}

func TestAdminPeers(t *testing.T) {
	env := tddtest.NewEnv(t)
	c := apiclient.New(env.URL, nil)
	ctx := context.Background()
	a := tddtest.NewIdentity(2)
	env.Peers.List = []tdd.PeerInfo{{ID: a.ID, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/4001")}, Source: "mdns"}}

	peers, err := c.Peers(ctx)
	if err != nil || len(peers) != 1 || peers[0].PeerID != a.ID.String() || peers[0].Source != "mdns" || !slices.Equal(peers[0].Addrs, []string{"/ip4/127.0.0.1/tcp/4001"}) {
		t.Fatalf("peers %+v %v", peers, err)
	}

	b := tddtest.NewIdentity(3)
	addr := "/ip4/127.0.0.1/tcp/4002/p2p/" + b.ID.String()
	p, err := c.Connect(ctx, addr)
	if err != nil || p.PeerID != b.ID.String() || p.Source != "connect" {
		t.Fatalf("connect: %+v %v", p, err)
	}
	if peers, _ := c.Peers(ctx); len(peers) != 2 {
		t.Errorf("after connect: %d peers", len(peers))
	}

	for _, tc := range []struct {
		addr   string
		status int
		detail string
	}{
		{"", 400, "required"},
		{"not-a-multiaddr", 400, "not a multiaddr"},
		{"/ip4/127.0.0.1/tcp/4002", 400, "/p2p/"},
		{"/ip4/127.0.0.1/tcp/4002/p2p/" + env.Self.ID.String(), 400, "this node itself"},
	} {
		_, err := c.Connect(ctx, tc.addr)
		var p *lmosproto.Problem
		if !errors.As(err, &p) || p.Status != tc.status || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("connect %q: %v, want %d naming %q", tc.addr, err, tc.status, tc.detail)
			continue
		}
		if !slices.Equal(fields(*p), []string{"/addr"}) {
			t.Errorf("connect %q: fields %v", tc.addr, fields(*p))
		}
	}
	env.Peers.ConnectErr = errors.New("dial backoff")
	_, err = c.Connect(ctx, addr)
	var pr *lmosproto.Problem
	if !errors.As(err, &pr) || pr.Status != http.StatusBadGateway || !strings.Contains(pr.Detail, "dial backoff") || !strings.Contains(pr.Detail, b.ID.String()) {
		t.Errorf("failed connect: %v", err)
	}
}

func TestAdminPeersNotImplemented(t *testing.T) {
	env := tddtest.NewEnv(t, func(d *tdd.Deps, _ *tdd.Config) { d.Peers = nil })
	c := apiclient.New(env.URL, nil)
	var p *lmosproto.Problem
	if _, err := c.Peers(context.Background()); !errors.As(err, &p) || p.Status != http.StatusNotImplemented {
		t.Errorf("peers: %v", err)
	}
	if _, err := c.Connect(context.Background(), "/ip4/127.0.0.1/tcp/1/p2p/"+tddtest.NewIdentity(2).ID.String()); !errors.As(err, &p) || p.Status != http.StatusNotImplemented {
		t.Errorf("connect: %v", err)
	}
}

func TestAdminFind(t *testing.T) {
	env := tddtest.NewEnv(t, func(_ *tdd.Deps, c *tdd.Config) { c.DefaultLimit = 2 })
	other := fleet(t, env)
	c := apiclient.New(env.URL, nil)
	res, err := c.Find(context.Background(), apiclient.FindQuery{Capability: "weather-forecast"})
	if err != nil || len(res.Things) != 2 || res.More {
		t.Fatalf("find: %+v %v", res, err)
	}
	pubs := map[string]peer.ID{}
	for _, f := range res.Things {
		pubs[f.TD.ID] = f.Publisher
	}
	if pubs["urn:a1"] != env.Self.ID || pubs["urn:b1"] != other.ID {
		t.Errorf("publishers %v", pubs)
	}
	if res, err := c.Find(context.Background(), apiclient.FindQuery{}); err != nil || !res.More || len(res.Things) != 2 {
		t.Errorf("first page: %d things, more %v, %v", len(res.Things), res.More, err)
	}
	var p *lmosproto.Problem
	if _, err := c.Find(context.Background(), apiclient.FindQuery{Type: "agent", Limit: -1, Capability: "x@bad range"}); !errors.As(err, &p) || p.Status != 400 {
		t.Errorf("bad find: %v", err)
	}
}
