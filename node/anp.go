package node

import (
	"time"

	"github.com/lmosnode/lmosnode/node/anp"
)

// buildANPClient builds the node's did:wba identity (Config.ANP.DID) and
// the ANP client that calls imported ANP agents signed with it; own's
// backends of kind anp.KindANP use it.
func (n *Node) buildANPClient(b *built, o *options) error {
	if n.cfg.ANP.DID != "" {
		var err error
		if n.anpID, err = anp.NewIdentity(n.cfg.ANP.DID, b.signing, time.Now()); err != nil {
			return err
		}
	}
	n.anpClient = anp.NewClient(n.anpID, nil, o.logger.With("component", "anp"))
	return nil
}

// buildANP builds the ANP surface: the node's DID document, the agent
// descriptions of what the caller may see (the owner's view, or a DID
// caller's), imports, and the DID-WBA check of the API's guard, which
// resolves callers' DIDs with the node's DID resolver (orgid.go) and refuses the
// keys the trust list denies.
func (n *Node) buildANP(b *built, o *options) {
	issuer := n.peerID.String()
	if n.anpID != nil {
		issuer = n.anpID.DID
	}
	auth := anp.NewAuthenticator(anp.KeyOfResolver(n.didResolver), n.trust.Admits, b.signing, issuer, anp.AuthConfig{
		Window: time.Duration(n.cfg.ANP.SignatureWindow), TokenTTL: time.Duration(n.cfg.ANP.TokenTTL)})
	n.anp = anp.New(anp.Deps{
		Directory: n.dir,
		TDs:       n.own,
		Visible:   n.own.Visible,
		VisibleTo: n.own.VisibleTo,
		Identity:  n.anpID,
		Auth:      auth,
		Publisher: n.own,
		Client:    n.anpClient,
	}, o.logger.With("component", "anp"))
}
