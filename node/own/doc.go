// Package own is the home of the node's own Things: the Things it
// publishes, signs and serves.
//
// Things (New) publishes, updates and removes them through a Publisher
// (the federation: sign, store, announce) and registers what serves their
// interactions — a Go program's handlers (interact.Thing) or an agent
// connected over WebSocket (Register, the wsgateway.Registrar), else the
// organisation's HTTP service named by the Thing's backend URL, looked up
// at call time. It builds and owns the interaction engine of the own
// Things (interact.Engine): it is the engine's Things (their current TDs)
// and their one Backend, and it authorizes calls of group-scoped Things
// with Deps.Access (a call from another peer over libp2p needs a member;
// a call through the node's own API is the owner's).
//
// It also owns the rule every consumer-facing transport shares, "which
// publisher serves Thing X for this node": the node's own Thing first,
// else the one publisher of the id; Things this node may not see (group
// scoped, Visible) do not count, and if only such Things have the id a
// call is refused with 403 (Owner for the router of WebSocket, MQTT and
// the SDK; Resolve for the HTTP surfaces, with ?publisher= pins and 300
// Multiple Choices).
//
// Nothing here climbs back into package node: the fan-out and the MQTT
// gateway follow the own Things through the directory's events
// (directory.FollowOwn), not through calls from Publish.
package own
