package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/p2p/net/conngater"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// whoTD is a weather agent with the action "who", the same for every
// publisher (a look-alike copies it).
func whoTD(t *testing.T, id string) *lmosproto.TD {
	t.Helper()
	td := testnet.TD(t, id, "Weather", "weather-forecast")
	td.Actions = map[string]*lmosproto.ActionAffordance{"who": {
		Output: json.RawMessage(`{"type":"string"}`),
		Forms:  []lmosproto.Form{{Href: "https://weather.invalid/who"}},
	}}
	return td
}

// registerWho registers whoTD on n, answering name to "who".
func registerWho(t *testing.T, n *node.Node, id, name string) {
	t.Helper()
	th := interact.NewThing().OnAction("who", func(context.Context, lmosproto.Value, func(lmosproto.Value)) (lmosproto.Value, error) {
		return lmosproto.ValueOf(name)
	})
	if _, err := n.Register(whoTD(t, id), th); err != nil {
		t.Fatal(err)
	}
}

// TestTrustLookAlike: another identity publishes a Thing with the same id,
// title and capabilities as the real one. Without a trust list the id is
// ambiguous (300, both candidates unknown); once the consumer's operator
// prefers the real publisher — named by the short form the CLI shows —
// resolution, calls and find go to it, and the consumer view says who
// published it and that it is trusted.
func TestTrustLookAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	net := testnet.New(t, 3, testnet.Options{})
	real, fake, consumer := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	net.Link(2, 0)
	net.Link(2, 1)
	id := testnet.UniqueID(t)
	registerWho(t, real, id, "real")
	registerWho(t, fake, id, "fake")
	testnet.WaitFor(t, "the consumer learns both Things", 30*time.Second, func() (bool, string) {
		n := len(consumer.Directory().Lookup(id))
		return n == 2, "has " + string(rune('0'+n))
	})
	base := "http://" + consumer.APIAddr()
	td := base + "/things/" + url.PathEscape(id) + "/td"

	status, body := send(t, http.MethodGet, td, "", "")
	var p lmosproto.Problem
	if err := json.Unmarshal(body, &p); status != http.StatusMultipleChoices || err != nil || len(p.Candidates) != 2 {
		t.Fatalf("without a trust list: %d %s, want 300 with 2 candidates", status, body)
	}
	for _, c := range p.Candidates {
		if c.Trust != "unknown" {
			t.Errorf("candidate %s: trust %q, want unknown", c.Publisher, c.Trust)
		}
	}

	// Changing the list acts as the node: the token is required.
	short := lmosproto.ShortPublisher(real.PeerID())
	trustURL := base + "/api/v1/trust/" + url.PathEscape(short)
	if status, _ := send(t, http.MethodPut, trustURL, "", `{"level":"prefer"}`); status != http.StatusUnauthorized {
		t.Fatalf("PUT trust without the token: %d, want 401", status)
	}
	list, err := apiclient.New(base, httpapi.BearerClient(consumer.APIToken())).SetTrust(t.Context(), short, "prefer")
	if err != nil || len(list.Entries) != 1 || list.Entries[0].Publisher != real.PeerID().String() || list.Entries[0].Short != short {
		t.Fatalf("prefer %s: %+v, %v", short, list, err)
	}

	resp, err := http.Get(td)
	if err != nil {
		t.Fatal(err)
	}
	var view map[string]any
	err = json.NewDecoder(resp.Body).Decode(&view)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("with the real publisher preferred: %s, %v", resp.Status, err)
	}
	if got := resp.Header.Get("LMOS-Publisher"); got != real.PeerID().String() {
		t.Errorf("LMOS-Publisher %s, want the real one %s", got, real.PeerID())
	}
	if resp.Header.Get("LMOS-Trust") != "trusted" || view["lmos:trust"] != "trusted" || view["lmos:publisher"] != real.PeerID().String() {
		t.Errorf("consumer view: LMOS-Trust %q, lmos:trust %v, lmos:publisher %v", resp.Header.Get("LMOS-Trust"), view["lmos:trust"], view["lmos:publisher"])
	}
	status, body = send(t, http.MethodPost, base+"/things/"+url.PathEscape(id)+"/actions/who", "", "")
	if status != http.StatusOK || strings.TrimSpace(string(body)) != `"real"` {
		t.Errorf("invoke who: %d %s, want the real publisher's answer", status, body)
	}

	// find lists the preferred publisher first and takes the short form
	// back as a filter.
	c := apiclient.New(base, nil)
	res, err := c.Find(t.Context(), apiclient.FindQuery{Capability: "weather-forecast"})
	if err != nil || len(res.Things) != 2 || res.Things[0].Publisher != real.PeerID() {
		t.Fatalf("find weather-forecast: %+v, %v; want the preferred publisher first", res.Things, err)
	}
	res, err = c.Find(t.Context(), apiclient.FindQuery{Publisher: lmosproto.ShortPublisher(fake.PeerID())})
	if err != nil || len(res.Things) != 1 || res.Things[0].Publisher != fake.PeerID() {
		t.Errorf("find --publisher %s: %+v, %v", lmosproto.ShortPublisher(fake.PeerID()), res.Things, err)
	}
	if _, err := c.Find(t.Context(), apiclient.FindQuery{Publisher: "…zzzzzzzz"}); err == nil {
		t.Error("find with a short form no publisher has: no error")
	}

	// The list survives a restart: it is in config.json.
	cfg, err := config.Load(consumer.Config().Home)
	if err != nil || len(cfg.Trust.Prefer) != 1 || cfg.Trust.Prefer[0] != real.PeerID().String() {
		t.Errorf("config.json trust: %+v, %v", cfg.Trust, err)
	}
	// Removed, the id is ambiguous again.
	if _, err := apiclient.New(base, httpapi.BearerClient(consumer.APIToken())).RemoveTrust(t.Context(), short); err != nil {
		t.Fatal(err)
	}
	if status, _ := send(t, http.MethodGet, td, "", ""); status != http.StatusMultipleChoices {
		t.Errorf("after trust rm: %d, want 300", status)
	}
}

// TestTrustDenyNotRelayed: the middle node of a line deny-lists a
// publisher; what it held of it is dropped, what it publishes next is
// ignored by the middle node's gossip validator (not a rejection: the
// sender is not penalised) and never reaches the node behind it.
func TestTrustDenyNotRelayed(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	tracer := &testnet.Tracer{}
	// The ends of the line never connect (the DHT would connect them):
	// the far node hears of the denied one through the middle only.
	gaters := make([]*conngater.BasicConnectionGater, 3)
	net := testnet.New(t, 3, testnet.Options{NodeOptions: func(i int) []node.Option {
		g, err := conngater.NewBasicConnectionGater(nil)
		if err != nil {
			t.Fatal(err)
		}
		gaters[i] = g
		opts := []node.Option{node.WithConnectionGater(g)}
		if i == 1 {
			opts = append(opts, node.WithPubSubTracer(tracer))
		}

		return opts
	}})
	denied, middle, far := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	if gaters[0].BlockPeer(far.PeerID()) != nil || gaters[2].BlockPeer(denied.PeerID()) != nil {
		t.Fatal("block peer")
	}
	net.Link(0, 1)
	net.Link(1, 2)
	testnet.WaitFor(t, "the middle node's announce mesh holds both ends", 30*time.Second, func() (bool, string) {
		return tracer.InMesh(far.PeerID(), lmosproto.TopicAnnounce) && tracer.InMesh(denied.PeerID(), lmosproto.TopicAnnounce) &&
			len(denied.PubSub().ListPeers(lmosproto.TopicAnnounce)) == 1, "not yet"
	})

	// Before the deny the line relays.
	first := testnet.UniqueID(t)
	registerWho(t, denied, first, "first")
	testnet.WaitFor(t, "the far node learns the first Thing through the middle", 30*time.Second, func() (bool, string) {
		return len(far.Directory().Lookup(first)) == 1, fmt.Sprintf("the middle node has %d", len(middle.Directory().Lookup(first)))
	})

	base := "http://" + middle.APIAddr()
	list, err := apiclient.New(base, httpapi.BearerClient(middle.APIToken())).SetTrust(t.Context(), denied.PeerID().String(), "deny")
	if err != nil || list.Dropped != 1 {
		t.Fatalf("deny: %+v, %v; want 1 record dropped", list, err)
	}
	if got := middle.Directory().Lookup(first); len(got) != 0 {
		t.Errorf("the middle node still holds the denied publisher's Thing: %v", got)
	}
	if status, _ := send(t, http.MethodGet, base+"/things/"+url.PathEscape(first)+"/td", "", ""); status != http.StatusNotFound {
		t.Errorf("GET the denied Thing: %d, want 404", status)
	}
	q := "?publisher=" + url.QueryEscape(denied.PeerID().String())
	if status, _ := send(t, http.MethodGet, base+"/things/"+url.PathEscape(first)+"/td"+q, "", ""); status != http.StatusForbidden {
		t.Errorf("GET the denied Thing pinned to its publisher: %d, want 403", status)
	}
	raw, err := os.ReadFile(filepath.Join(middle.Config().Home, config.File))
	if err != nil || !bytes.Contains(raw, []byte(denied.PeerID().String())) {
		t.Errorf("config.json lacks the deny: %s %v", raw, err)
	}

	second := testnet.UniqueID(t)
	registerWho(t, denied, second, "second")
	testnet.WaitFor(t, "the middle node's validator ignores the second Thing", 30*time.Second, func() (bool, string) {
		for _, v := range tracer.Refused() {
			if v.Author == denied.PeerID() && bytes.Contains(v.Data, []byte(second)) {
				return v.Reason == pubsub.RejectValidationIgnored, "refused: " + v.Reason
			}
		}
		return false, "not yet"
	})
	for _, v := range tracer.RefusedFrom(denied.PeerID()) {
		if v.Reason != pubsub.RejectValidationIgnored {
			t.Errorf("refusal of the denied publisher's message: %s, want ignored (no penalty)", v.Reason)
		}
	}
	// The middle node has decided: it neither stores nor forwards it, and
	// the far node has no other peer.
	if got := middle.Directory().Lookup(second); len(got) != 0 {
		t.Errorf("the middle node stored the denied publisher's new Thing: %v", got)
	}
	if got := far.Directory().Lookup(second); len(got) != 0 {
		t.Errorf("the far node got the denied publisher's new Thing through the middle: %v", got)
	}
}
