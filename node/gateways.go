package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/mqttgw"
	"github.com/lmosnode/lmosnode/node/wsgateway"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Routes of the WebSocket gateways on the node's HTTP API.
const (
	// wsPath is where consumers speak lmosprotocol to any Thing the node
	// knows.
	wsPath = "/ws"
	// wsAgentPath is where agent processes connect to register Things and
	// answer their interactions.
	wsAgentPath = "/ws/agent"
)

// attach publishes td as one of the node's own Things and makes backend
// serve its interactions (a Go handler set, or an agent connected over
// WebSocket). Attaching the same id again replaces both.
func (n *Node) attach(ctx context.Context, td *lmosproto.TD, backend interact.Backend) error {
	n.backends.setSDK(td.ID, backend)
	if _, _, err := (publisher{n}).Publish(ctx, td, nil); err != nil {
		n.backends.setSDK(td.ID, nil)
		return err
	}
	return nil
}

// agentRegistrar lets agents connected over WebSocket register Things:
// they are published and served like any Thing the node owns.
type agentRegistrar struct{ n *Node }

// Register implements wsgateway.Registrar.
func (r agentRegistrar) Register(ctx context.Context, td *lmosproto.TD, backend interact.Backend) error {
	return r.n.attach(ctx, td, backend)
}

// Unregister implements wsgateway.Registrar: a signed tombstone withdraws
// the Thing.
func (r agentRegistrar) Unregister(ctx context.Context, thingID string) error {
	return publisher(r).Remove(ctx, thingID)
}

// buildGateways builds the WebSocket gateways and, with Config.MQTT set,
// the MQTT gateway; teardown closes them.
func (n *Node) buildGateways() error {
	log := n.log.With("component", "wsgateway")
	var err error
	if n.ws, err = wsgateway.NewGateway(n.router, wsgateway.Options{Logger: log}); err != nil {
		return err
	}
	if n.wsAgent, err = wsgateway.NewAgentGateway(agentRegistrar{n}, wsgateway.Options{Logger: log}); err != nil {
		return err
	}
	if n.cfg.MQTT == "" {
		return nil
	}
	n.mqtt, err = mqttgw.New(mqttgw.DefaultConfig(n.cfg.MQTT), n.router, mqttgw.ThingListerFunc(n.exposedThings),
		mqttgw.WithLogger(n.log.With("component", "mqtt")))
	if err != nil {
		return fmt.Errorf("mqtt %s: %w", n.cfg.MQTT, err)
	}
	return nil
}

// exposedThings are the node's own public Things: those it offers on MQTT.
// Things scoped to groups stay off a broker that anyone may read.
func (n *Node) exposedThings() []*lmosproto.TD {
	var tds []*lmosproto.TD
	for _, e := range n.dir.Own() {
		if len(e.Groups) > 0 {
			continue
		}
		if td, err := e.TD(); err == nil {
			tds = append(tds, td)
		}
	}
	return tds
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

// syncMQTT tells the MQTT gateway, if any, that the node's own Things
// changed, so a Thing published or removed now is served or withdrawn on
// the broker at once rather than at the gateway's next periodic sync.
func (n *Node) syncMQTT() {
	if n.mqtt == nil {
		return
	}
	n.wg.Go(func() {
		ctx, cancel := context.WithTimeout(n.ctx, mqttSyncTimeout)
		defer cancel()
		if err := n.mqtt.Sync(ctx); err != nil && n.ctx.Err() == nil {
			n.log.Warn("mqtt: sync things", "err", err)
		}
	})
}

// mqttSyncTimeout bounds one sync of the MQTT gateway (broker round trips
// for the subscriptions of every own Thing).
const mqttSyncTimeout = 30 * time.Second
