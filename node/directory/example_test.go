package directory_test

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"time"

	datastore "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func Example() {
	// The node's identity, and a peer's.
	nodeKey := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	self, _ := lmosproto.PeerIDFromEd25519(nodeKey.Public().(ed25519.PublicKey))
	peerKey := ed25519.NewKeyFromSeed(append([]byte{1}, make([]byte, ed25519.SeedSize-1)...))

	ds := dssync.MutexWrap(datastore.NewMapDatastore()) // a node uses pebble
	dir, err := directory.Open(directory.Deps{Datastore: ds, Self: self}, directory.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dir.Close()

	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	raw, _ := os.ReadFile("../../proto/testdata/golden/td/weather-agent.in.json")
	td, _ := lmosproto.ParseTD(raw)

	// The node publishes its weather agent, served by a local backend...
	own, _ := lmosproto.SignThing(td, nodeKey, now)
	change, _ := dir.Put(own, &directory.Local{Backend: "http://127.0.0.1:8081"})
	fmt.Println("own:", change)

	// ... and learns a peer's Thing with the same id: both are kept.
	td.Title, td.Capabilities[0].Version = "PeerWeather", "2.0.0"
	theirs, _ := lmosproto.SignThing(td, peerKey, now)
	change, _ = dir.Put(theirs, nil)
	fmt.Println("peer:", change)

	res, _ := dir.Search(directory.Query{Type: "agent", Capability: "weather-forecast@^1.2"})
	for _, e := range res.Entries {
		fmt.Println("found:", e.Title, e.Own, e.Local.Backend)
	}
	res, _ = dir.Search(directory.Query{Text: "weather forecast"})
	fmt.Println("text matches:", res.Total)
	// Output:
	// own: created
	// peer: created
	// found: WeatherAgent true http://127.0.0.1:8081
	// text matches: 2
}
