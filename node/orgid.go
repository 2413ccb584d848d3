package node

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
)

// WithDIDResolver sets the options of the node's resolver of did:web and
// did:wba DIDs (package node/did): organisations' and DID-WBA callers'.
// Tests give it a dialer that maps a made-up domain to 127.0.0.1 and the
// test CA (didtest.Server.Options). Without it the resolver dials public
// addresses only and trusts the system's CAs.
func WithDIDResolver(opts did.Options) Option {
	return func(o *options) error {
		o.didOpts = &opts
		return nil
	}
}

// buildOrganizations builds the resolver of organisation DIDs and the
// membership it gives the trust list (docs/identity.md): a publisher is a
// member of the organisation its TDs claim once that organisation's DID
// document lists its key.
func (n *Node) buildOrganizations(o *options) {
	var opts did.Options
	if o.didOpts != nil {
		opts = *o.didOpts
	}
	n.didResolver = did.NewResolver(opts)
	n.orgs = did.NewMembers(n.didResolver)
	n.trust.SetMembership(func(p peer.ID) (string, string, bool) {
		org, ok := n.orgs.Verified(p)
		return org.DID, org.Domain, ok
	})
}

// followClaims notes the organisation each learned TD claims, so that the
// trust list's organisation entries apply to its publisher (resolution
// starts at once, in the background). It runs until the node closes.
func (n *Node) followClaims() error {
	events, cancel, err := n.dir.Subscribe("")
	if err != nil {
		return err
	}
	n.wg.Go(func() {
		defer cancel()
		for {
			select {
			case <-n.ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				n.noteClaim(ev)
			}
		}
	})
	return nil
}

// noteClaim notes the claim of a created or updated Thing.
func (n *Node) noteClaim(ev directory.Event) {
	if ev.Type != directory.EventCreated && ev.Type != directory.EventUpdated {
		return
	}
	rec, err := ev.Entry.Record()
	if err != nil || rec.Tombstone() || rec.TD == nil {
		return
	}
	if claim := rec.TD.Organization(); claim != "" {
		n.orgs.Note(ev.Publisher, claim)
	}
}
