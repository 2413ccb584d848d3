// Package groupapi is the HTTP API of a node's signed agent groups
// (docs/groups.md, "HTTP API"): the Handler that serves it with the
// node's group service (package groupsvc) and the JSON shapes it speaks
// (wire.go, declared once for both ends). The CLI and other programs call
// it through node/apiclient, the one client of the node's API.
//
// It is a package of its own, not part of groupsvc, so that the group
// service stays the network side of groups (libp2p protocols, topics,
// the DHT) with no HTTP in it; the dependency goes one way, groupapi →
// groupsvc.
//
// # Routes
//
//	GET    /api/v1/groups                          → 200 [GroupInfo]
//	POST   /api/v1/groups                          CreateRequest → 201 GroupInfo
//	GET    /api/v1/groups/{id}                     → 200 GroupInfo with log
//	PATCH  /api/v1/groups/{id}                     PatchRequest → 200 GroupInfo (rename, set policy)
//	DELETE /api/v1/groups/{id}                     → 200 GroupInfo (dissolve)
//	POST   /api/v1/groups/{id}/invitations         InviteRequest? → 201 Invitation
//	GET    /api/v1/groups/{id}/invitations         ?all=true → 200 [InvitationInfo]
//	DELETE /api/v1/groups/{id}/invitations/{inv}   → 200 GroupInfo (uninvite: revoke the invitation)
//	POST   /api/v1/groups/join                     JoinRequest → 200 GroupInfo | 202 {"group", "pending": true}
//	DELETE /api/v1/groups/{id}/members/{peer}      → 200 GroupInfo (remove)
//	PUT    /api/v1/groups/{id}/admins/{peer}       → 200 GroupInfo (grant admin)
//	DELETE /api/v1/groups/{id}/admins/{peer}       → 200 GroupInfo (revoke admin)
//	POST   /api/v1/groups/{id}/leave               → 200 GroupInfo
//	POST   /api/v1/groups/{id}/messages            any JSON → 202
//	GET    /api/v1/groups/{id}/messages            → 200 text/event-stream
//
// {id} is a group ID or a name exactly one of the node's groups has.
// Request bodies are at most groups.MaxMessageSize bytes; unknown members
// are refused. Errors are RFC 9457 problem details (lmosproto.Problem) whose
// status says what failed: 400 a bad body or path value (the detail names
// the field), 403 the node is not an admin or not a member, 404 an unknown
// group (or a {peer} that is not a member), 409 a dissolved group or the
// last admin, 410 an invitation expired, revoked or spent, 503 a node without gossip or
// shutting down; a join an admin's node refused has the status that node
// gave.
//
// The message stream sends one event "post" per post (data: a Post, one
// line; the first with "retry: 2000") and a ": heartbeat" comment every 15 s of
// quiet. It ends when the client goes, the node stops being a member, or
// the Handler is closed.
//
// # Use
//
// The node builds one Handler with New after its group service, routes
// each of Patterns to it on its API mux, and closes it before shutting
// its HTTP server down. A client (node/apiclient) needs only the API's
// base URL (and an *http.Client that carries the API token, if the node
// has one).
package groupapi
