package own

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Owner implements interact.Owners for the router of the node's consumers
// (WebSocket, MQTT, an embedding program): the node's own Thing first,
// else the single publisher of the id. Things this node may not see do
// not count; if only such Things have the id, the answer is 403
// Forbidden.
func (t *Things) Owner(_ context.Context, id string) (peer.ID, error) {
	var all, hidden []directory.Entry
	for _, e := range t.deps.Directory.Lookup(id) {
		if t.Visible(e) {
			all = append(all, e)
		} else {
			hidden = append(hidden, e)
		}
	}
	switch {
	case len(all) == 0 && len(hidden) > 0:
		return "", Forbidden(hidden[0])
	case len(all) == 0:
		return "", fmt.Errorf("thing %q: %w", id, interact.ErrUnknownThing)
	case len(all) == 1 || all[0].Own:
		return all[0].Publisher, nil
	}
	return "", fmt.Errorf("thing %q is published by %d peers and none is this node; call the owner with Client.Do", id, len(all))
}

// Forbidden is the answer to a call of e, a Thing restricted to groups
// that this node may not see.
func Forbidden(e directory.Entry) *lmosproto.Problem {
	return &lmosproto.Problem{Status: http.StatusForbidden, Title: interact.TitleForbidden,
		Detail: fmt.Sprintf("Thing %q of %s is restricted to the groups %s, and this node may not call it",
			e.ThingID, e.Publisher, strings.Join(e.Groups, ", "))}
}
