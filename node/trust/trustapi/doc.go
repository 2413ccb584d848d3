// Package trustapi is the HTTP API of the operator's trust list
// (docs/api.md#trust): the Handler that serves it over a node's
// trust.List and the JSON shapes it speaks (declared once for both ends;
// the client is node/apiclient). It sits beside package trust as groupapi
// sits beside groupsvc: the list stays free of HTTP.
//
// # Routes
//
//	GET    /api/v1/trust              → 200 List
//	PUT    /api/v1/trust/{publisher}  Request → 200 List (with Dropped after a deny)
//	DELETE /api/v1/trust/{publisher}  → 200 List
//
// {publisher} is a peer ID, a did:key, or a short form
// (proto.ShortPublisher) of a publisher the directory holds (PUT) or the
// list holds (DELETE). Every change is written back to the "trust"
// member of config.json before it is answered; a failed write leaves the
// list as it was.
package trustapi
