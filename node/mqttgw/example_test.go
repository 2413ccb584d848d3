package mqttgw_test

import (
	"log"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/mqttgw"
	"github.com/lmosnode/lmosnode/proto"
)

// A node exposes its own Things (served by its Engine) on a broker.
// Consumers then publish to "{thingID}/actions/{name}" with an MQTT v5
// response topic and correlation data, and subscribe to
// "{thingID}/events/{name}".
func ExampleNew() {
	var td *proto.TD // the Thing's TD, e.g. from proto.ParseTD
	engine, err := interact.NewEngine(interact.EngineDeps{Things: interact.ThingsFunc(func(id string) (*proto.TD, bool) {
		return td, td != nil && id == td.ID
	})}, interact.EngineConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()

	gw, err := mqttgw.New(mqttgw.Deps{
		Invoker: engine,
		Things:  mqttgw.ThingListerFunc(func() []*proto.TD { return []*proto.TD{td} }),
	}, mqttgw.Config{BrokerURL: "mqtt://127.0.0.1:1883"})
	if err != nil {
		log.Fatal(err)
	}
	if err := gw.Start(); err != nil { // connects in the background, reconnects until Close
		log.Fatal(err)
	}
	defer gw.Close()
}
