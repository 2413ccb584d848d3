package node

import (
	"slices"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/trust"
)

// budgetValuer values learned Things for the directory's budget
// (config.QuotaConfig.MaxLearnedBytes): a publisher the trust list allows
// or prefers, a Thing restricted to a group the node is a member of, a
// publisher connected now. The directory adds recent use itself.
func budgetValuer(tl *trust.List, memberOf func(string) bool, h host.Host) directory.Valuer {
	return func(p peer.ID, groups []string) directory.Value {
		var v directory.Value
		if tl.Mark(p) == trust.Trusted {
			v |= directory.ValueTrusted
		}
		if slices.ContainsFunc(groups, memberOf) {
			v |= directory.ValueMember
		}
		if h.Network().Connectedness(p) == network.Connected {
			v |= directory.ValueOnline
		}
		return v
	}
}
