package node_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestThingsPlainTD: a plain TD 1.1 document (the TD 1.1 context alone,
// no LMOS term), written through a real node's directory API as any WoT
// directory client writes it (PUT, anonymous POST, PATCH), is signed by
// the node with the LMOS binding it needs for the lmos:seq it adds; the
// signed record verifies and reaches a peer byte for byte (W3C WoT
// Discovery tdd-things-create-known-td, tdd-things-create-anonymous-td,
// tdd-things-update-partial).
func TestThingsPlainTD(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	net := testnet.New(t, 2, testnet.Options{})
	alice, bob := net.Nodes[0], net.Nodes[1]
	net.Link(1, 0)
	api := "http://" + alice.APIAddr()
	id := testnet.UniqueID(t)
	plain := func(idMember, title string) []byte {
		return []byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1",` + idMember + `"title":"` + title +
			`","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`)
	}
	send := func(method, u, ct string, body []byte) *http.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+alice.APIToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %s: %s", method, u, resp.Status, b)
		}
		return resp
	}

	if resp := send(http.MethodPut, api+"/things/"+url.PathEscape(id), "application/td+json", plain(`"id":"`+id+`",`, "Lamp")); resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %s, want 201", resp.Status)
	}
	send(http.MethodPatch, api+"/things/"+url.PathEscape(id), "application/merge-patch+json", []byte(`{"title":"Lamp 2"}`))
	anon := send(http.MethodPost, api+"/things", "application/td+json", plain("", "Anon"))
	anonID, err := url.PathUnescape(strings.TrimPrefix(anon.Header.Get("Location"), api+"/things/"))
	if anon.StatusCode != http.StatusCreated || err != nil || !strings.HasPrefix(anonID, "urn:uuid:") {
		t.Fatalf("POST: %s, Location %q", anon.Status, anon.Header.Get("Location"))
	}

	for _, c := range []struct {
		id  string
		seq uint64
	}{{id, 2}, {anonID, 1}} {
		testnet.WaitFor(t, "Bob has "+c.id, waitLong, testnet.All([]*node.Node{bob}, has(alice.PeerID(), c.id, c.seq, false)))
		mine, _ := alice.Directory().Latest(alice.PeerID(), c.id)
		theirs, _ := bob.Directory().Latest(alice.PeerID(), c.id)
		raw, err := mine.Raw()
		if err != nil {
			t.Fatal(err)
		}
		got, err := theirs.Raw()
		if err != nil || !bytes.Equal(raw, got) {
			t.Fatalf("Bob's record of %s differs from Alice's (%v)", c.id, err)
		}
		signer, err := lmosproto.VerifyDocument(got)
		if err != nil || signer.PeerID != alice.PeerID() {
			t.Fatalf("record of %s: signer %s, %v", c.id, signer.PeerID, err)
		}
		rec, err := lmosproto.ParseRecord(got)
		if err != nil {
			t.Fatal(err)
		}
		if want := `["https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://eclipse.dev/lmos/protocol/v1"}]`; string(rec.TD.Context) != want {
			t.Errorf("record of %s: @context %s, want %s", c.id, rec.TD.Context, want)
		}
	}
}
