package dht_test

import (
	"context"
	"fmt"
	"slices"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/dht"
)

func ExampleThingKey() {
	publisher, err := peer.Decode("12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN")
	if err != nil {
		panic(err)
	}
	fmt.Println(dht.ThingKey(publisher, "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77"))
	key := dht.ThingKey(publisher, "https://weather.example.com/things/weather")
	fmt.Println(key)

	p, thingID, err := dht.ParseThingKey(key)
	fmt.Println(p == publisher, thingID, err)
	// Output:
	// /lmos-td/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN/urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77
	// /lmos-td/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN/https:%2F%2Fweather.example.com%2Fthings%2Fweather
	// true https://weather.example.com/things/weather <nil>
}

func ExampleCapabilityCID() {
	fmt.Println(dht.CapabilityCID("weather-forecast"))
	fmt.Println(dht.TypeCID("lmos:Agent"))
	// Vendor names are compared caselessly: both name one vendor.
	fmt.Println(dht.VendorCID("Example Weather GmbH"))
	fmt.Println(dht.VendorCID("  EXAMPLE  weather gmbh"))
	// Output:
	// bafkreih4g4fi4pvruk3oxzqsb26aurrvdphzyvceejzmzs22cqd7evgws4
	// bafkreif26n4melmwgdqts246i4he7xyquc6ccylggmm5ceeku2to4fhruq
	// bafkreiehjt35neucpzbzuji3xenscriakmldgrls4t6azof6omzbsdue3i
	// bafkreiehjt35neucpzbzuji3xenscriakmldgrls4t6azof6omzbsdue3i
}

func ExampleOptions() {
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		panic(err)
	}
	defer h.Close()

	opts, err := dht.Options(dht.Params{
		Mode:      dht.ModeServer,
		Datastore: dssync.MutexWrap(ds.NewMapDatastore()), // the node's pebble datastore
		// BootstrapPeers: from the node's configuration; none by default.
	})
	if err != nil {
		panic(err)
	}
	d, err := kaddht.New(context.Background(), h, opts...)
	if err != nil {
		panic(err)
	}
	defer d.Close()

	fmt.Println(slices.Contains(h.Mux().Protocols(), dht.ProtocolID), dht.ProtocolID)
	// Output:
	// true /lmos/kad/1.0.0
}
