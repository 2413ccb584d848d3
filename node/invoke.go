package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/fanout"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// registerTimeout bounds the publication of a Thing by Register.
const registerTimeout = 30 * time.Second

// backends serves the interactions of the node's own Things: the Go
// handlers a program registered (Register) first, else the HTTP service
// named by the Thing's --backend URL, looked up at call time so that a
// republication with another URL takes effect at once. It is the one
// Backend the engine holds for every own Thing.
type backends struct {
	dir  *directory.Directory
	self peer.ID

	mu   sync.Mutex
	sdk  map[string]interact.Backend      // by thing id
	http map[string]*interact.HTTPBackend // by backend URL
	opts interact.HTTPBackendOptions
}

func newBackends(dir *directory.Directory, self peer.ID, opts interact.HTTPBackendOptions) *backends {
	return &backends{dir: dir, self: self, sdk: map[string]interact.Backend{}, http: map[string]*interact.HTTPBackend{}, opts: opts}
}

// Handle implements interact.Backend.
func (b *backends) Handle(ctx context.Context, x *interact.Exchange) error {
	be, err := b.backend(x.Request().ThingID)
	if err != nil {
		return err
	}
	return be.Handle(ctx, x)
}

func (b *backends) backend(id string) (interact.Backend, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if be, ok := b.sdk[id]; ok {
		return be, nil
	}
	e, ok := b.dir.Get(b.self, id)
	if !ok || e.Local.Backend == "" {
		return nil, &lmosproto.Problem{Status: http.StatusServiceUnavailable, Title: interact.TitleUnavailable,
			Detail: fmt.Sprintf("Thing %q has no backend on this node (publish it with --backend URL, or register handlers)", id)}
	}
	if be, ok := b.http[e.Local.Backend]; ok {
		return be, nil
	}
	be, err := interact.NewHTTPBackend(e.Local.Backend, b.opts)
	if err != nil {
		return nil, &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway,
			Detail: fmt.Sprintf("backend of Thing %q: %v", id, err)}
	}
	b.http[e.Local.Backend] = be
	return be, nil
}

func (b *backends) setSDK(id string, be interact.Backend) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if be == nil {
		delete(b.sdk, id)
		return
	}
	b.sdk[id] = be
}

// owners implements interact.Owners with the directory: the node's own
// Thing first, else the single publisher of the id. Things that visible
// hides (group-scoped Things this node may not see) do not count; if only
// such Things have the id, the answer is 403 Forbidden.
type owners struct {
	dir     *directory.Directory
	self    peer.ID
	visible func(directory.Entry) bool
}

// Owner implements interact.Owners.
func (o owners) Owner(_ context.Context, id string) (peer.ID, error) {
	var all, hidden []directory.Entry
	for _, e := range o.dir.Lookup(id) {
		if o.visible == nil || o.visible(e) {
			all = append(all, e)
		} else {
			hidden = append(hidden, e)
		}
	}
	switch {
	case len(all) == 0 && len(hidden) > 0:
		return "", &lmosproto.Problem{Status: http.StatusForbidden, Title: interact.TitleForbidden,
			Detail: fmt.Sprintf("Thing %q of %s is restricted to the groups %s, and this node may not call it",
				id, hidden[0].Publisher, strings.Join(hidden[0].Groups, ", "))}
	case len(all) == 0:
		return "", fmt.Errorf("thing %q: %w", id, interact.ErrUnknownThing)
	case len(all) == 1 || all[0].Own:
		return all[0].Publisher, nil
	}
	return "", fmt.Errorf("thing %q is published by %d peers and none is this node; call the owner with Client.Do", id, len(all))
}

// ownTD is the engine's view of the node's own Things.
func (n *Node) ownTD(id string) (*lmosproto.TD, bool) {
	e, ok := n.dir.Get(n.peerID, id)
	if !ok {
		return nil, false
	}
	td, err := e.TD()
	if err != nil {
		n.log.Warn("own thing unreadable", "thing", id, "err", err)
		return nil, false
	}
	return td, true
}

// publisher is the tdd.Publisher of the node: the federation, plus the
// engine's backend for every Thing it publishes.
type publisher struct{ n *Node }

// Publish implements tdd.Publisher.
func (p publisher) Publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error) {
	e, ch, err := p.n.fed.Publish(ctx, td, local)
	if err == nil {
		p.n.engine.SetBackend(e.ThingID, p.n.backends)
		p.n.fanOut(e)
		p.n.syncMQTT()
	}
	return e, ch, err
}

// Remove implements tdd.Publisher.
func (p publisher) Remove(ctx context.Context, id string) error {
	if err := p.n.fed.Remove(ctx, id); err != nil {
		return err
	}
	p.n.backends.setSDK(id, nil)
	p.n.engine.SetBackend(id, nil)
	if p.n.fanout != nil {
		if err := p.n.fanout.Unpublish(id); err != nil {
			p.n.log.Warn("fanout: unpublish", "thing", id, "err", err)
		}
	}
	p.n.syncMQTT()
	return nil
}

// Register publishes td as one of the node's own Things (signed, stored,
// announced, like PUT /things/{id}) and makes thing serve its
// interactions, for a Go program that embeds the node. Registering the
// same id again replaces both.
func (n *Node) Register(td *lmosproto.TD, thing *interact.Thing) (directory.Entry, error) {
	if td == nil || thing == nil {
		return directory.Entry{}, errors.New("node: register: td and thing are required")
	}
	ctx, cancel := context.WithTimeout(n.ctx, registerTimeout)
	defer cancel()
	if err := n.attach(ctx, td, thing); err != nil {
		return directory.Entry{}, fmt.Errorf("node: register thing %q: %w", td.ID, err)
	}
	e, _ := n.dir.Get(n.peerID, td.ID)
	return e, nil
}

// Invoker returns the node's router: it opens interactions with any Thing
// the node knows, its own (through its engine) or another node's (over
// libp2p). See package interact.
func (n *Node) Invoker() interact.Invoker { return n.router }

// buildInteract builds the engine, the libp2p server and client and the
// router; teardown closes them.
func (n *Node) buildInteract() error {
	log := n.log.With("component", "interact")
	n.backends = newBackends(n.dir, n.peerID, interact.HTTPBackendOptions{Logger: log})
	var err error
	if n.engine, err = interact.NewEngine(interact.ThingsFunc(n.ownTD), interact.Options{Authorize: n.authorize, Logger: log}); err != nil {
		return err
	}
	for _, e := range n.dir.Own() {
		n.engine.SetBackend(e.ThingID, n.backends)
	}
	if n.interactServer, err = interact.NewServer(n.host, n.engine, interact.TransportOptions{Logger: log}); err != nil {
		return err
	}
	if n.interactClient, err = interact.NewClient(n.host, interact.TransportOptions{Logger: log}); err != nil {
		return err
	}
	if n.ps != nil {
		n.fanout, err = fanout.New(fanout.Params{
			PubSub:     n.ps,
			Self:       n.peerID,
			Local:      n.engine,
			TD:         n.knownTD,
			TopicScore: topicScore(),
		}, fanout.Config{}, fanout.WithLogger(n.log.With("component", "fanout")))
		if err != nil {
			return err
		}
	}
	n.router = interact.NewRouter(n.peerID, n.engine, n.remote(), owners{dir: n.dir, self: n.peerID, visible: n.visible})
	return nil
}

// closeInteract closes what buildInteract built: first the server (no
// more remote callers), then the client (our calls to other nodes), then
// the engine (running backend calls).
func (n *Node) closeInteract() error {
	var errs []error
	if n.fanout != nil {
		errs = append(errs, n.fanout.Close())
	}
	if n.interactServer != nil {
		errs = append(errs, n.interactServer.Close())
	}
	if n.interactClient != nil {
		errs = append(errs, n.interactClient.Close())
	}
	if n.engine != nil {
		errs = append(errs, n.engine.Close())
	}
	return errors.Join(errs...)
}

// knownTD is the TD of any Thing the node knows, by publisher and id.
func (n *Node) knownTD(publisher peer.ID, id string) (*lmosproto.TD, bool) {
	e, ok := n.dir.Get(publisher, id)
	if !ok {
		return nil, false
	}
	td, err := e.TD()
	return td, err == nil
}

// fanOut (re)starts the gossip fan-out of an own Thing's events (pattern 5,
// package fanout): a new version may name other events.
func (n *Node) fanOut(e directory.Entry) {
	if n.fanout == nil {
		return
	}
	td, err := e.TD()
	if err != nil {
		n.log.Warn("fanout: own thing unreadable", "thing", e.ThingID, "err", err)
		return
	}
	if err := n.fanout.Unpublish(e.ThingID); err != nil {
		n.log.Warn("fanout: unpublish", "thing", e.ThingID, "err", err)
	}
	if err := n.fanout.Publish(td); err != nil && !errors.Is(err, fanout.ErrGroupScoped) {
		n.log.Warn("fanout: publish", "thing", e.ThingID, "err", err)
	}
}

// remoteThings reaches other nodes' Things over libp2p; with gossip on,
// event subscriptions are served from each Thing's events topic instead
// of a stream per subscriber to the owner.
type remoteThings struct {
	client *interact.Client
	fanout *fanout.Fanout // nil without gossip
}

// Invoker implements interact.Remote and gateway.Remote.
func (r remoteThings) Invoker(owner peer.ID) interact.Invoker {
	if r.fanout == nil {
		return r.client.Invoker(owner)
	}
	return &fanout.Invoker{Owner: owner, Remote: r.client.Invoker(owner), Fanout: r.fanout}
}

func (n *Node) remote() remoteThings { return remoteThings{client: n.interactClient, fanout: n.fanout} }
