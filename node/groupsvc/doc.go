// Package groupsvc runs a node's signed agent groups (docs/groups.md): it
// keeps the operation log of every group the node belongs to (or belonged
// to), signs the node's own operations, spreads them on the group topics
// and in the DHT, answers and makes join requests, catches up with other
// members, and tells the node who may see and call its group-scoped
// Things. The data model, the fold and the checks are package groups';
// this package is their network side.
//
// # Local operations
//
// Every operation the node makes (Create, Remove, SetAdmin, Rename,
// SetPolicy, Leave, Dissolve, the add an admin signs for a joiner, and the
// add and remove with which Rekey moves a rotated or revoked key's
// membership to its successor) goes
// the same way: groups.Log.Sign, groups.Log.Add, the operation is
// published on the group topic as {"op": …}, the log is persisted (durable
// when the call returns; the fsync runs after the publication, and a crash
// in between loses nothing the members cannot give back, see
// commitLocked), and the whole log is put in the DHT under
// groups.Key(id) in the background (debounced per group, and republished
// every dht.RepublishInterval).
//
// # Group topic
//
// While the node is a member of a group it subscribes to groups.Topic(id)
// with a validator that checks every message against the node's current
// state of the group:
//
//   - {"op": …}: accepted into the log (rules 1–4 of the fold); an
//     operation whose author was not entitled is rejected, a duplicate is
//     ignored, one whose parents are missing is held (and accepted on the
//     topic if its author is a member, so that it travels on) and the
//     forwarding peer is asked for its log;
//   - {"post": …}: accepted only if its author (StrictSign "from") may post
//     (groups.State.CanPost);
//   - {"thing": …}: accepted only if its author is a member and the node's
//     Thing hook (the federation) accepts the record.
//
// PeerFilter keeps gossipsub from meshing or gossiping with non-members on
// group topics, and SubscriptionFilter drops the subscriptions of
// non-members to group topics (of everyone, to the topic of a group the
// node does not know), so that not even a flood-published message of this
// node reaches an outsider, however early it subscribed. A peer whose
// subscription was dropped and that is a member by this node's state
// later is asked (with the sync protocol's "resubscribe") to announce its
// subscription again, and asked again after a refusal, sooner than the next
// anti-entropy round.
//
// gossipsub applies both filters only to arriving subscriptions, so a
// member that is removed (or leaves) and does not unsubscribe would keep
// getting the topic's messages. When the node's state of a group changes
// such that a peer that was a member no longer is (compared at each
// reconcile, after every batch of operations) and the node is still a
// member, it closes its connections to that peer, which makes gossipsub
// forget the peer's subscriptions, and dials it again in the background,
// retrying with backoff (RedialMin to RedialMax) until a connection is up
// or the peer is gone (no address of it left in the peerstore); the
// subscription the peer announces on the new connection is refused.
// It then syncs with the peer (again every ResubscribeEvery, at most a few
// times, until the peer's log shows it is out), and the sync protocol
// answers such a former member the log, so that it learns of the
// operation it may have missed.
// Interactions running over the closed connections are cut.
//
// After a dissolve, or when the node is removed or leaves, it leaves the
// topic and keeps the log read-only.
//
// # Join protocol (/lmos/group/join/1.0.0)
//
// One stream per request. The joiner writes one length-prefixed frame
// (proto.WriteFrame) {"token": "lmosgroup:…"} and closes its write side;
// the admin's node answers one frame: {"log": [signed operations…]} when
// the stream's remote peer was added (or is a member already), else
// {"error": "…", "status": 403|409|410|400|429}. A node answers at most
// ServeBurst join and sync requests of one peer at once, then one every
// ServeEvery (429: the joiner tries again later). The admin's node checks the
// token with groups.Log.CheckJoin against the authenticated remote peer —
// the token's secret must match the invitation's hash of it, which is how
// the joiner proves it holds the token — signs the add with the signed
// invitation (never the token or its secret: the log is public), spreads
// it, and answers (410 for an invitation expired, revoked or spent).
//
// # Invitations
//
// Invite makes a single-use invitation valid for DefaultInviteTTL unless
// InviteOptions widen it, and keeps its signed part (not the secret) in
// the datastore so that Invitations lists it with those the log's adds
// used; RevokeInvitation commits an uninvite operation, which every node
// enforces in its fold.
//
// The joiner tries the issuer at the token's addresses, then through the
// DHT (FindPeer), then every other admin of the group's DHT log. When none
// answers, the join is pending: it is persisted and retried with backoff
// (and at once when the issuer or an admin connects) until an admin
// answers or the token expires.
//
// # Sync protocol (/lmos/group/sync/1.0.0)
//
// The asking node writes {"group": id, "heads": [its log's heads],
// "resubscribe": bool} and closes its write side; the answering node
// answers {"log": […]} if the asker is a current member of a group it
// knows (or a former member it evicted, see above), else {"error": "…"}. When the asker's heads name operations the
// answering node lacks, it asks back. With "resubscribe" the answering
// node also announces its subscription to the group topic again (at most
// once every ResubscribeEvery). A node syncs with every member that
// connects and every member whose topic subscription arrives (operations
// published before it did reached that member by no gossip), and every
// AntiEntropyEvery with one connected member per group; on Start it
// fetches the DHT log of each of its groups.
//
// # Use
//
// One Service per node, built with New after the host, the PubSub, the
// DHT and the datastore, started with Start and closed with Close before
// them. Its methods are safe for concurrent use. Package groupapi serves
// them over the node's HTTP API.
package groupsvc
