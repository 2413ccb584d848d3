package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/config"
)

// A consumer on another node that subscribes to an event whose owner's
// backend answers 404 gets the owner's 404 as the problem status, not
// 200 text/event-stream with nothing (the topic carries events only; the
// fan-out's probe of the owner brings the error).
func TestRemoteSubscribeGetsOwnersError(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such feed", http.StatusNotFound)
	}))
	defer backend.Close()
	// gossip on: the consumer subscribes through the events topic
	net := testnet.New(t, 2, testnet.Options{Configure: func(_ int, cfg *config.Config) { cfg.Gossip = true }})
	owner, consumer := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(t)
	raw, err := json.Marshal(deviceTD(t, id))
	if err != nil {
		t.Fatal(err)
	}
	newAPI(t, owner).expect("POST", "/api/v1/things", `{"td": `+string(raw)+`, "backend": "`+backend.URL+`"}`, 201)
	net.Link(1, 0)
	testnet.WaitFor(t, "consumer learns the Thing", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) > 0, "not yet"
	})
	c := newAPI(t, consumer)
	c.hc.Timeout = 10 * time.Second // a silent event stream would never end
	status, hdr, body := c.do("GET", thingPath(id)+"/events/alarm", "")
	if status != http.StatusNotFound || !strings.Contains(hdr.Get("Content-Type"), "problem+json") {
		t.Fatalf("remote subscribe: %d %s %s, want the owner's 404 problem", status, hdr.Get("Content-Type"), body)
	}
}
