// Package console owns the node's web console: the static pages (HTML,
// CSS, JavaScript modules, embedded with go:embed, no build step) served
// at / of the API, the snapshot stream that keeps its views of the node,
// peers, groups and own Things live (GET /api/v1/console/stream), and the
// QR code of a group invitation (POST /api/v1/console/qr).
//
// The pages are plain ES modules and call the API like any client: the
// directory, its /events stream, the WoT HTTP binding, the groups API.
// They verify each Thing's proof themselves (WebCrypto Ed25519 over the
// JCS form, eddsa-jcs-2022), so a record a node serves tampered shows as
// invalid whatever the node says. docs/console.md describes the views.
package console
