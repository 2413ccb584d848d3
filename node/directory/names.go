package directory

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Errors of ParsePublisher for a short form.
var (
	// ErrUnknownPublisher: no publisher held ends with the short form.
	ErrUnknownPublisher = errors.New("no publisher known to this node ends with it")
	// ErrAmbiguousPublisher: several do.
	ErrAmbiguousPublisher = errors.New("several publishers known to this node end with it: give more characters or the full peer ID")
)

// ParsePublisher returns the publisher s names: a peer ID or a did:key
// (proto.ParsePublisher), or a short form (proto.PublisherSuffix: "…" and
// the end of a peer ID) that ends the peer ID of exactly one publisher of
// a live Thing held here, the node's own included.
func (d *Directory) ParsePublisher(s string) (peer.ID, error) {
	id, err := lmosproto.ParsePublisher(s)
	if err == nil {
		return id, nil
	}
	suffix, ok := lmosproto.PublisherSuffix(s)
	if !ok {
		return "", fmt.Errorf("%q is neither a peer ID, a did:key nor a short form (… and at least %d final characters of a peer ID)", s, lmosproto.MinPublisherSuffix)
	}
	var found []peer.ID
	d.mu.RLock()
	for p, list := range d.idx.publishers {
		if len(list) > 0 && strings.HasSuffix(p.String(), suffix) {
			found = append(found, p)
		}
	}
	d.mu.RUnlock()
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%q: %w", s, ErrUnknownPublisher)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, p := range found {
		names[i] = p.String()
	}
	slices.Sort(names)
	return "", fmt.Errorf("%q: %w (%s)", s, ErrAmbiguousPublisher, strings.Join(names, ", "))
}

// DropPublisher removes every record of another publisher p held here
// (an operator deny-listed it) and returns how many; thing_deleted is
// emitted for the live ones. The node's own records are never dropped.
func (d *Directory) DropPublisher(p peer.ID) (int, error) {
	if p == d.self {
		return 0, errors.New("directory: drop publisher: the node's own records stay")
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.closed {
		return 0, ErrClosed
	}
	var drop []*thing
	d.mu.RLock()
	for t := range d.byID.all() {
		if t.publisherID() == p && !t.own {
			drop = append(drop, t)
		}
	}
	d.mu.RUnlock()
	if len(drop) == 0 {
		return 0, nil
	}
	if err := d.remove(drop); err != nil {
		return 0, fmt.Errorf("directory: drop publisher %s: %w", p, err)
	}
	return len(drop), nil
}
