package node

import (
	"log/slog"

	"github.com/lmosnode/lmosnode/node/agentsjson"
)

// buildAgentsJSON builds the agents.json surface: the node's
// /.well-known/agents.json lists the Things it may see, with the
// consumer views the HTTP binding serves (docs/bridges.md); imported
// flows are published as own Tools whose backends are the client's.
// Every caller of the API is this node's owner: one view.
func (n *Node) buildAgentsJSON(log *slog.Logger) error {
	var err error
	n.agentsJSON, err = agentsjson.New(agentsjson.Deps{
		Directory:    n.dir,
		Visible:      n.own.Visible,
		ConsumerView: n.gateway.ConsumerViewOf,
		Self:         n.peerID,
		Publisher:    n.own,
		Client:       n.agentsJSONClient,
	}, agentsjson.Config{}, agentsjson.WithLogger(log.With("component", "agentsjson")))
	return err
}
