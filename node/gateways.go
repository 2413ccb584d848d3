package node

import (
	"errors"
	"fmt"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/mqttgw"
	"github.com/lmosnode/lmosnode/node/wsgateway"
)

// buildGateways builds the WebSocket gateways and, with Config.MQTT set,
// the MQTT gateway; teardown closes them.
func (n *Node) buildGateways() error {
	log := n.log.With("component", "wsgateway")
	// Browser pages of the origins apiCORS allows may open the WebSocket
	// endpoints too; others only from the API's own host.
	wscfg := wsgateway.Config{OriginPatterns: n.cfg.APICORS.WebSocketOriginPatterns()}
	var err error
	if n.ws, err = wsgateway.NewGateway(wsgateway.GatewayDeps{Invoker: interact.Instrument(n.router, interact.SideConsumer, "websocket", n.instrumentation())}, wscfg, wsgateway.WithLogger(log)); err != nil {
		return err
	}
	// Agents connected over WebSocket register Things: they are published
	// and served like any Thing the node owns.
	if n.wsAgent, err = wsgateway.NewAgentGateway(wsgateway.AgentDeps{Registrar: n.own}, wscfg, wsgateway.WithLogger(log)); err != nil {
		return err
	}
	if n.cfg.MQTT == "" {
		return nil
	}
	// The node's own public Things: Things scoped to groups stay off a
	// broker that anyone may read.
	n.mqtt, err = mqttgw.New(mqttgw.Deps{Invoker: interact.Instrument(n.router, interact.SideConsumer, "mqtt", n.instrumentation()), Things: mqttgw.ThingListerFunc(n.own.Exposed), Exposes: n.own.Exposes},
		mqttgw.Config{BrokerURL: n.cfg.MQTT}, mqttgw.WithLogger(n.log.With("component", "mqtt")))
	if err != nil {
		return fmt.Errorf("mqtt %s: %w", n.cfg.MQTT, err)
	}
	return nil
}

// closeGateways closes the gateways; the WebSocket ones first, since
// http.Server.Shutdown does not close upgraded connections.
func (n *Node) closeGateways() error {
	var errs []error
	if n.ws != nil {
		errs = append(errs, n.ws.Close())
	}
	if n.wsAgent != nil {
		errs = append(errs, n.wsAgent.Close())
	}
	if n.mqtt != nil {
		errs = append(errs, n.mqtt.Close())
	}
	return errors.Join(errs...)
}
