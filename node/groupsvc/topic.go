package groupsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Received is a post on a group topic, as local subscribers get it.
type Received struct {
	// From is the post's author (its gossipsub StrictSign author).
	From peer.ID
	// Body is the post's body, any JSON.
	Body json.RawMessage
	// Sent is when the author says it sent the post.
	Sent time.Time
}

// postSub is one local subscriber of a group's posts.
type postSub struct {
	ch     chan Received
	closed bool
}

// joinTopic registers the validator of g's topic, joins it and subscribes.
// The caller holds recMu.
func (s *Service) joinTopic(g *group) (err error) {
	ps := s.ps.Load()
	if ps == nil {
		return nil
	}
	name := groups.Topic(g.id)
	if err := ps.RegisterTopicValidator(name, s.validate(g)); err != nil {
		return fmt.Errorf("topic %s: validator: %w", name, err)
	}
	topic, err := ps.Join(name)
	if err != nil {
		return errors.Join(fmt.Errorf("topic %s: join: %w", name, err), ps.UnregisterTopicValidator(name))
	}
	if s.p.TopicScore != nil {
		if err := topic.SetScoreParams(s.p.TopicScore); err != nil {
			return errors.Join(fmt.Errorf("topic %s: score parameters: %w", name, err), topic.Close(), ps.UnregisterTopicValidator(name))
		}
	}
	sub, err := topic.Subscribe()
	if err != nil {
		return errors.Join(fmt.Errorf("topic %s: subscribe: %w", name, err), topic.Close(), ps.UnregisterTopicValidator(name))
	}
	events, err := topic.EventHandler()
	if err != nil {
		sub.Cancel()
		return errors.Join(fmt.Errorf("topic %s: events: %w", name, err), topic.Close(), ps.UnregisterTopicValidator(name))
	}
	done, evDone := make(chan struct{}), make(chan struct{})
	evCtx, evCancel := context.WithCancel(s.ctx)
	if !s.spawn(func() { defer close(done); s.readTopic(g, sub) }) {
		evCancel()
		events.Cancel()
		sub.Cancel()
		return errors.Join(ErrClosed, topic.Close(), ps.UnregisterTopicValidator(name))
	}
	if !s.spawn(func() { defer close(evDone); s.watchTopic(evCtx, g, events) }) {
		close(evDone)
	}
	s.mu.Lock()
	g.topic, g.sub, g.readerDone, g.validating = topic, sub, done, true
	g.events, g.evCancel, g.evDone = events, evCancel, evDone
	s.mu.Unlock()
	s.log.Debug("joined group topic", "group", g.id, "topic", name)
	return nil
}

// leaveTopic cancels the subscription of g's topic, waits for its reader,
// closes the topic and unregisters the validator. The caller holds recMu.
func (s *Service) leaveTopic(g *group) error {
	s.mu.Lock()
	topic, sub, done, validating := g.topic, g.sub, g.readerDone, g.validating
	events, evCancel, evDone := g.events, g.evCancel, g.evDone
	g.topic, g.sub, g.readerDone, g.validating = nil, nil, nil, false
	g.events, g.evCancel, g.evDone = nil, nil, nil
	s.mu.Unlock()
	var errs []error
	if events != nil {
		events.Cancel()
		evCancel()
		<-evDone
	}
	if sub != nil {
		sub.Cancel()
	}
	if done != nil {
		<-done
	}
	if topic != nil {
		if err := topic.Close(); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", topic.String(), err))
		}
	}
	if validating {
		if err := s.ps.Load().UnregisterTopicValidator(groups.Topic(g.id)); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: validator: %w", groups.Topic(g.id), err))
		}
	}
	return errors.Join(errs...)
}

// evict closes the node's connections to each of lost (peers that were
// members of g and are not any more, while the node still is), so that
// gossipsub forgets their subscriptions to g's topic, and dials them
// again in the background: whatever else the node does with them (other
// groups, the DHT, public Things) goes on over the new connection, where
// their subscription to g's topic is refused, and they are told the log
// (which they may not have got on the topic). Interactions running over
// the closed connections are cut. The caller holds recMu.
//
// gossipsub (go-libp2p-pubsub v0.16) checks the peer and subscription
// filters only when a subscription arrives, and sends on the topic map:
//
//   - PubSub.handleIncomingRPC passes the announced subscriptions through
//     SubscriptionFilter.FilterIncomingSubscriptions before it adds them
//     to PubSub.topics; nothing else adds to that map;
//   - GossipSubRouter.rpcs (behind Publish, for the node's own messages
//     and the ones it forwards) sends only to peers of PubSub.topics[topic]:
//     every one of them for the node's own messages (flood publish), else
//     the direct peers and floodsub peers among them and the mesh, whose
//     peers GossipSubRouter.getPeers picks from PubSub.topics[topic]
//     through PeerFilter (handleGraft, handleIHave and handleIWant check
//     PeerFilter too);
//   - a peer already in PubSub.topics stays there (and in the mesh) until
//     it unsubscribes or dies: there is no way to drop one peer from one
//     topic. When all its connections close, the pubsub stream to it ends
//     (PubSub.handlePeerDead → notifyPeerDead) and PubSub.handleDeadPeers
//     removes it from every topic (clearPeerFromTopicsState) and from the
//     mesh and fanout (GossipSubRouter.OnClosedOutboundStream), even when
//     a new connection is up already. On the new connection the peer
//     announces its subscriptions again (the hello RPC), and
//     handleIncomingRPC filters them by the state that excludes it.
func (s *Service) evict(g *group, lost []peer.ID) {
	nw := s.p.Host.Network()
	for _, p := range lost {
		if p == s.self || nw.Connectedness(p) != network.Connected {
			continue
		}
		if err := nw.ClosePeer(p); err != nil {
			s.log.Debug("close connections to a former member", "group", g.id, "peer", p, "err", err)
		}
		s.log.Info("closed connections to a former member", "group", g.id, "peer", p)
		s.spawn(func() {
			if redial(s.ctx, s.p.Host, p, backoff.New(RedialMin, RedialMax), s.log.With("group", g.id)) {
				s.tellFormer(g, p)
			}
		})
	}
}

// redial connects h to p again, as evict does after it closed their
// connections: it dials, and after a failure waits the next delay of b and
// dials again, until a connection is up (its own or one p opened), p is
// gone (the peerstore holds no address for it any more: they expire a
// while after the last connection), or ctx ends. It reports whether p is
// connected.
func redial(ctx context.Context, h host.Host, p peer.ID, b *backoff.Backoff, log *slog.Logger) bool {
	for attempt := 1; ; attempt++ {
		if h.Network().Connectedness(p) == network.Connected {
			return true
		}
		if len(h.Peerstore().Addrs(p)) == 0 {
			log.Info("former member gone: no address left to reconnect to", "peer", p, "attempts", attempt-1)
			return false
		}
		dialCtx, cancel := context.WithTimeout(ctx, JoinTimeout)
		err := h.Connect(dialCtx, peer.AddrInfo{ID: p})
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		delay := b.NextBackOff()
		log.Debug("reconnect to a former member failed; will retry", "peer", p, "attempt", attempt, "retry_in", delay, "err", err)
		if !backoff.Sleep(ctx, delay) {
			return false
		}
	}
}

// tellFormer makes sure the former member p learns that it is one: it
// may have missed the operation on the topic (this node closed the
// connection it would have come by). Syncing shows p this node's heads,
// p asks back (at most once a second per peer and group), and this node
// answers it the log (serveSync); until p's log says p is out, this node
// tries again every ResubscribeEvery, at most tellTries times.
func (s *Service) tellFormer(g *group, p peer.ID) {
	for range tellTries {
		if st := g.state(); st.IsMember(p) || !st.IsMember(s.self) {
			return
		}
		l, ok := s.syncLog(g, p, false)
		if !ok || (l != nil && !l.State().IsMember(p)) {
			return
		}
		if !backoff.Sleep(s.ctx, ResubscribeEvery) {
			return
		}
	}
}

// resubscribe announces the node's subscription to g's topic again, at
// most once every ResubscribeEvery: members that dropped it (the node was
// not a member for them yet) learn it. A request that comes sooner is
// served by one announcement when the interval has passed.
func (s *Service) resubscribe(g *group) {
	s.dropMu.Lock()
	if s.resubWait[g.id] {
		s.dropMu.Unlock()
		return
	}
	if wait := ResubscribeEvery - time.Since(s.resubAt[g.id]); wait > 0 {
		s.resubWait[g.id] = true
		s.dropMu.Unlock()
		if !backoff.Sleep(s.ctx, wait) {
			return
		}
		s.dropMu.Lock()
		delete(s.resubWait, g.id)
	}
	s.resubAt[g.id] = time.Now()
	s.dropMu.Unlock()
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.mu.RLock()
	topic, old, done := g.topic, g.sub, g.readerDone
	s.mu.RUnlock()
	if topic == nil || s.ctx.Err() != nil {
		return
	}
	old.Cancel()
	<-done
	sub, err := topic.Subscribe()
	if err != nil {
		s.log.Warn("resubscribe to group topic", "group", g.id, "err", err)
		return
	}
	ndone := make(chan struct{})
	if !s.spawn(func() { defer close(ndone); s.readTopic(g, sub) }) {
		sub.Cancel()
		close(ndone)
	}
	s.mu.Lock()
	g.sub, g.readerDone = sub, ndone
	s.mu.Unlock()
	s.log.Debug("announced group topic subscription again", "group", g.id)
}

// watchTopic syncs with every member whose subscription to g's topic
// arrives: operations published before it did (which gossipsub sent it no
// copy of) reach it through the sync, which carries this node's heads.
func (s *Service) watchTopic(ctx context.Context, g *group, events *pubsub.TopicEventHandler) {
	for {
		ev, err := events.NextPeerEvent(ctx)
		if err != nil {
			return
		}
		if ev.Type != pubsub.PeerJoin || !g.state().IsMember(ev.Peer) || !s.due(ev.Peer, g.id, "subscribed", ResubscribeEvery) {
			continue
		}
		s.spawn(func() { s.syncWith(g, ev.Peer, false) })
	}
}

// readTopic hands the accepted posts of g's topic to the local
// subscribers until sub is cancelled or the Service closes.
func (s *Service) readTopic(g *group, sub *pubsub.Subscription) {
	for {
		msg, err := sub.Next(s.ctx)
		if err != nil {
			return
		}
		r, ok := msg.ValidatorData.(*Received)
		if !ok {
			continue
		}
		g.deliver(*r)
	}
}

// deliver offers r to every local subscriber, skipping those whose queue
// is full.
func (g *group) deliver(r Received) {
	g.subsMu.Lock()
	defer g.subsMu.Unlock()
	for ps := range g.subs {
		select {
		case ps.ch <- r:
		default:
		}
	}
}

// endSubs ends every local subscription of g.
func (g *group) endSubs() {
	g.subsMu.Lock()
	defer g.subsMu.Unlock()
	for ps := range g.subs {
		ps.closed = true
		close(ps.ch)
		delete(g.subs, ps)
	}
}

// validate returns the topic validator of g; see the package
// documentation.
func (s *Service) validate(g *group) pubsub.ValidatorEx {
	return func(ctx context.Context, _ peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
		res, err := s.check(ctx, g, msg)
		if err != nil {
			s.log.Debug("group message refused", "group", g.id, "from", msg.ReceivedFrom, "author", msg.GetFrom(), "result", topicval.ResultName(res), "err", err)
		}
		return res
	}
}

func (s *Service) check(ctx context.Context, g *group, msg *pubsub.Message) (pubsub.ValidationResult, error) {
	m, err := groups.ParseMessage(msg.GetData())
	if err != nil {
		return pubsub.ValidationReject, err
	}
	author := msg.GetFrom()
	if err := author.Validate(); err != nil {
		return pubsub.ValidationReject, fmt.Errorf("author: %w", err)
	}
	local := msg.ReceivedFrom == s.self
	switch {
	case m.Op != nil:
		return s.checkOp(g, msg, m.Op, local)
	case m.Post != nil:
		if !g.state().CanPost(author) {
			return pubsub.ValidationReject, fmt.Errorf("post by %s: %w", author, ErrNotAllowed)
		}
		msg.ValidatorData = &Received{From: author, Body: m.Post.Body, Sent: m.Post.Sent}
		return pubsub.ValidationAccept, nil
	case m.Thing != nil:
		if !g.state().IsMember(author) {
			return pubsub.ValidationReject, fmt.Errorf("thing by %s: %w", author, ErrNotMember)
		}
		if local || s.p.Things == nil {
			return pubsub.ValidationAccept, nil
		}
		ctx, cancel := context.WithTimeout(ctx, scopedTimeout)
		defer cancel()
		if res, err := s.p.Things.ValidateScoped(ctx, author, g.id, m.Thing); res != pubsub.ValidationAccept {
			return res, fmt.Errorf("thing by %s: %w", author, err)
		}
		return pubsub.ValidationAccept, nil
	}
	return pubsub.ValidationReject, errors.New("empty message")
}

// checkOp takes an operation from g's topic into the log.
func (s *Service) checkOp(g *group, msg *pubsub.Message, raw json.RawMessage, local bool) (pubsub.ValidationResult, error) {
	op, err := s.p.Ops.ParseOp(raw)
	if err != nil {
		return pubsub.ValidationReject, err
	}
	if g.log.Has(op.ID) {
		if local {
			return pubsub.ValidationAccept, nil
		}
		return pubsub.ValidationIgnore, fmt.Errorf("op %s: %w", op.ID, groups.ErrDuplicate)
	}
	added, err := g.log.Add(op)
	switch {
	case errors.Is(err, groups.ErrDuplicate):
		return pubsub.ValidationIgnore, err
	case errors.Is(err, groups.ErrLogFull):
		return pubsub.ValidationIgnore, err
	case err != nil:
		return pubsub.ValidationReject, err
	case len(added) == 0:
		// Held until its parents arrive: ask the forwarder for its log.
		from := msg.ReceivedFrom
		s.spawn(func() { s.syncWith(g, from, false) })
		if g.state().IsMember(op.Author) {
			return pubsub.ValidationAccept, nil
		}
		return pubsub.ValidationIgnore, fmt.Errorf("op %s: parents missing, author %s not a member", op.ID, op.Author)
	}
	g.refresh()
	if err := s.persist(g); err != nil {
		s.log.Error("persist group log", "group", g.id, "err", err)
	}
	s.changed(g)
	s.log.Debug("group op accepted", "group", g.id, "op", op.ID, "kind", op.Kind, "author", op.Author, "applied", len(added))
	return pubsub.ValidationAccept, nil
}

// publishOp publishes op on g's topic, if the node is on it.
func (s *Service) publishOp(ctx context.Context, g *group, op *groups.Op) {
	data, err := json.Marshal(groups.Message{Op: op.Raw})
	if err != nil {
		s.log.Error("encode group op", "group", g.id, "err", err)
		return
	}
	if err := s.publish(ctx, g, data); err != nil && !errors.Is(err, ErrNoGossip) {
		s.log.Warn("publish group op", "group", g.id, "op", op.ID, "err", err)
	}
}

// publish publishes data on g's topic.
func (s *Service) publish(ctx context.Context, g *group, data []byte) error {
	s.mu.RLock()
	topic := g.topic
	s.mu.RUnlock()
	if topic == nil {
		if s.ps.Load() == nil {
			return ErrNoGossip
		}
		return fmt.Errorf("group %s: %w", g.id, ErrNotMember)
	}
	return topic.Publish(ctx, data)
}

// Publish posts body (any JSON) on the group's topic. The node must be a
// member allowed to post by the group's policy.
func (s *Service) Publish(ctx context.Context, id string, body json.RawMessage) error {
	g, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !json.Valid(body) {
		return fmt.Errorf("%w: body: not JSON", ErrBadRequest)
	}
	st := g.state()
	switch {
	case st.Dissolved:
		return fmt.Errorf("group %s: %w", id, ErrDissolved)
	case !st.IsMember(s.self):
		return fmt.Errorf("group %s: this node: %w", id, ErrNotMember)
	case !st.CanPost(s.self):
		return fmt.Errorf("group %s: post role %q: %w", id, st.Policy.PostRole, ErrNotAllowed)
	case s.ps.Load() == nil:
		return ErrNoGossip
	}
	data, err := json.Marshal(groups.Message{Post: &groups.Post{Body: body, Sent: s.now().UTC()}})
	if err != nil {
		return fmt.Errorf("group %s: encode post: %w", id, err)
	}
	if len(data) > groups.MaxMessageSize {
		return fmt.Errorf("%w: post of %d bytes is too large", ErrBadRequest, len(data))
	}
	if err := s.publish(ctx, g, data); err != nil {
		return fmt.Errorf("group %s: post: %w", id, err)
	}
	return nil
}

// Subscribe returns the posts that arrive on the group's topic from now on
// (the node's own included) and a function that ends the subscription.
// The channel is closed when the subscription ends, when the node leaves
// the group and when the Service closes; a subscriber that does not keep
// up misses posts.
func (s *Service) Subscribe(id string) (<-chan Received, func(), error) {
	g, err := s.lookup(id)
	if err != nil {
		return nil, nil, err
	}
	st := g.state()
	switch {
	case st.Dissolved:
		return nil, nil, fmt.Errorf("group %s: %w", id, ErrDissolved)
	case !st.IsMember(s.self):
		return nil, nil, fmt.Errorf("group %s: this node: %w", id, ErrNotMember)
	case s.ps.Load() == nil:
		return nil, nil, ErrNoGossip
	}
	ps := &postSub{ch: make(chan Received, postBuffer)}
	g.subsMu.Lock()
	g.subs[ps] = struct{}{}
	g.subsMu.Unlock()
	cancel := func() {
		g.subsMu.Lock()
		defer g.subsMu.Unlock()
		if !ps.closed {
			ps.closed = true
			close(ps.ch)
			delete(g.subs, ps)
		}
	}
	return ps.ch, cancel, nil
}

// PublishThing publishes a group-scoped Thing record ({"thing": raw}) on
// the topic of each of groupIDs the node is a member of, and returns on
// how many it did.
func (s *Service) PublishThing(ctx context.Context, groupIDs []string, raw []byte) (int, error) {
	data, err := json.Marshal(groups.Message{Thing: raw})
	if err != nil {
		return 0, fmt.Errorf("groupsvc: encode thing: %w", err)
	}
	n := 0
	var errs []error
	for _, id := range groupIDs {
		g := s.get(id)
		if g == nil || !g.state().IsMember(s.self) {
			continue
		}
		if err := s.publish(ctx, g, data); err != nil {
			if !errors.Is(err, ErrNoGossip) {
				errs = append(errs, fmt.Errorf("group %s: %w", id, err))
			}
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Allowed reports whether p may see and call the Thing thingID restricted
// to groupIDs: whether it is a member of one of the groups that the node
// knows and that is not dissolved, with thingID within its scope (an
// empty thingID asks for membership only). The node's own calls do not go
// through it; for the node itself it answers like for any peer.
func (s *Service) Allowed(groupIDs []string, thingID string, p peer.ID) bool {
	for _, id := range groupIDs {
		g := s.get(id)
		if g == nil {
			continue
		}
		st := g.state()
		if (thingID == "" && st.IsMember(p)) || (thingID != "" && st.Allowed(p, thingID)) {
			return true
		}
	}
	return false
}

// MemberOf reports whether the node is a member of the group (known and
// not dissolved).
func (s *Service) MemberOf(id string) bool {
	g := s.get(id)
	return g != nil && g.state().IsMember(s.self)
}

// State returns the node's current state of the group.
func (s *Service) State(id string) (groups.State, bool) {
	g := s.get(id)
	if g == nil {
		return groups.State{}, false
	}
	return g.state(), true
}

// groupOfTopic returns the group whose topic is topic; ok is false for
// other topics.
func (s *Service) groupOfTopic(topic string) (g *group, isGroup bool) {
	id, ok := strings.CutPrefix(topic, lmosproto.TopicGroupPrefix)
	if !ok {
		return nil, false
	}
	return s.get(id), true
}

// PeerFilter is the node's gossipsub peer filter
// (pubsub.WithPeerFilter): on a group topic it admits only peers that are
// current members by this node's state; other topics admit everyone.
func (s *Service) PeerFilter(pid peer.ID, topic string) bool {
	g, isGroup := s.groupOfTopic(topic)
	if !isGroup {
		return true
	}
	return g != nil && g.state().IsMember(pid)
}

// SubscriptionFilter returns the node's gossipsub subscription filter
// (pubsub.WithSubscriptionFilter): it drops the subscriptions to group
// topics of peers that are not members by this node's state (every peer,
// for a group it does not know), so that the node never sends them
// anything on those topics (not even its own messages, which gossipsub
// floods to every subscribed peer). Members whose subscription was
// dropped are asked to announce it again once they are members here.
func (s *Service) SubscriptionFilter() pubsub.SubscriptionFilter { return subFilter{s} }

type subFilter struct{ s *Service }

// CanSubscribe implements pubsub.SubscriptionFilter: the node itself may
// subscribe to anything.
func (subFilter) CanSubscribe(string) bool { return true }

// FilterIncomingSubscriptions implements pubsub.SubscriptionFilter.
func (f subFilter) FilterIncomingSubscriptions(from peer.ID, subs []*pubsubpb.RPC_SubOpts) ([]*pubsubpb.RPC_SubOpts, error) {
	out := subs[:0:0]
	for _, so := range subs {
		if !so.GetSubscribe() {
			out = append(out, so)
			continue
		}
		// A group unknown here is dropped too: should this node join it
		// later, an outsider's early subscription must not be kept.
		g, isGroup := f.s.groupOfTopic(so.GetTopicid())
		if !isGroup || (g != nil && g.state().IsMember(from)) {
			out = append(out, so)
			continue
		}
		f.s.drop(so.GetTopicid(), from)
	}
	return out, nil
}

// drop remembers that the subscription of p to topic was dropped.
func (s *Service) drop(topic string, p peer.ID) {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	n := 0
	for _, ps := range s.dropped {
		n += len(ps)
	}
	if n >= maxDropped {
		clear(s.dropped)
	}
	ps := s.dropped[topic]
	if ps == nil {
		ps = map[peer.ID]struct{}{}
		s.dropped[topic] = ps
	}
	ps[p] = struct{}{}
}

// wasDropped reports whether the subscription of p to topic was dropped
// and not asked for again yet.
func (s *Service) wasDropped(topic string, p peer.ID) bool {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	_, ok := s.dropped[topic][p]
	return ok
}

// takeDrop forgets that the subscription of p to topic was dropped, and
// reports whether it was.
func (s *Service) takeDrop(topic string, p peer.ID) bool {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	if _, ok := s.dropped[topic][p]; !ok {
		return false
	}
	delete(s.dropped[topic], p)
	return true
}

// undrop forgets, and returns, the peers whose subscription to topic was
// dropped and who are members by st.
func (s *Service) undrop(topic string, st groups.State) []peer.ID {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	var out []peer.ID
	for p := range s.dropped[topic] {
		if st.IsMember(p) && p != s.self {
			out = append(out, p)
			delete(s.dropped[topic], p)
		}
	}
	slices.Sort(out)
	return out
}
