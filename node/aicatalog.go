package node

import (
	"context"
	"crypto/ed25519"
	"log/slog"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/aicatalog"
	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
)

// buildAICatalog builds the node's AI Catalog, its ARD search and the
// catalog import (docs/bridges.md): the agents as the A2A bridge's cards,
// the tools as the MCP endpoint's Server Card, searches falling back on
// the federation as the listing's capability filter does, imports going
// through the A2A and MCP imports.
func (n *Node) buildAICatalog(key ed25519.PrivateKey, log *slog.Logger) error {
	var err error
	n.serverCard = n.mcp.ServerCardHandler(api.PathMCP)
	n.aiCatalog, err = aicatalog.New(aicatalog.Deps{
		Directory: n.dir,
		Visible:   n.own.Visible,
		TDs:       n.own,
		Self:      n.peerID,
		Key:       key,
		Cards:     n.a2a,
		CardPath: func(p peer.ID, id string) string {
			return a2abridge.AgentPath(p, id) + ".well-known/agent-card.json"
		},
		ServerCard:     n.serverCard,
		ServerCardPath: mcpbridge.PathServerCard,
		ToolNames:      n.mcp.ToolNames,
		Finder:         n.fed,
		ImportA2A:      n.importA2AEntry,
		ImportMCP: func(ctx context.Context, endpoint string) (any, error) {
			return n.mcpImports.Add(ctx, mcpbridge.Source{URL: endpoint})
		},
	}, aicatalog.Config{Log: log.With("component", "ai-catalog")})
	return err
}

// importA2AEntry imports an A2A card of an AI Catalog: its digest pinned
// when a trust manifest bound it, the manifest signer's key pinned for
// the card's own signature.
func (n *Node) importA2AEntry(ctx context.Context, req aicatalog.A2AImport) (any, error) {
	r := a2abridge.ImportRequest{Card: req.Card, CardDigest: req.Digest, AllowUnsigned: req.AllowUnsigned}
	if req.Key != nil {
		jwk, err := jose.JSONWebKey{Key: req.Key, Algorithm: string(jose.EdDSA), Use: "sig"}.MarshalJSON()
		if err != nil {
			return nil, err
		}
		r.Keys = jwk
	}
	return n.a2a.Import(ctx, r)
}
