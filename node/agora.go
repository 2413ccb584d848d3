package node

import (
	"log/slog"

	"github.com/lmosnode/lmosnode/node/agora"
	"github.com/lmosnode/lmosnode/node/aitp"
)

// buildAgora builds the Agora and AITP endpoints of every lmos:Agent the
// node may see (docs/bridges.md), with the A2A bridge's rules: the own
// Things' rule of which publisher serves a Thing, calls through the
// bridges' router (the engine or the owner node).
func (n *Node) buildAgora(log *slog.Logger) error {
	deps := agora.Deps{
		Directory: n.dir,
		Visible:   n.own.Visible,
		Resolver:  n.own,
		TDs:       n.own,
		Invokers:  n.bridgeRouter,
	}
	var err error
	if n.agora, err = agora.New(deps, agora.Config{}, log.With("component", "agora")); err != nil {
		return err
	}
	n.aitp, err = aitp.New(deps, aitp.Config{}, log.With("component", "aitp"))
	return err
}
