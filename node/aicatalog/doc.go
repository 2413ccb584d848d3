// Package aicatalog serves the node's agents and tools as an AI Catalog
// (the AI Catalog specification and ARD v0.9), answers ARD's search over
// the directory and the federation behind it, and imports the A2A and MCP
// entries of other catalogs.
//
//	GET  /.well-known/ai-catalog.json   the catalog, paged (offset, limit; Link rel="next")
//	POST /ard/search                    ARD search (ard.openapi.yaml); /ard/ is the registry's base URL
//	POST /api/v1/ai-catalog/imports     import a catalog (lmosnode import ai-catalog URL)
//
// The catalog's first page lists the node's ARD registry (type
// application/ai-registry+json) and its MCP endpoint (its Server Card,
// mcpbridge.ServerCardHandler; the MCP tool names of the agents and tools
// the node may see as capabilities); then one entry per lmos:Agent the
// node may see (a group-scoped one only to members: Deps.Visible), its
// A2A card as the A2A bridge serves it (url and digest of the card's
// bytes). Each agent and MCP entry carries one trust manifest signed by
// the node (trust.go): its did:key as contributor and signer, a subject
// bound by digest, a detached JWS (EdDSA, typ ai-catalog-trust-manifest+jws)
// over the JCS form of the manifest without signature.jws, under the
// profile ProfileDIDKey. The pages are rendered once per revision of the
// directory and of the node's view (Refresh) through an httpapi.DocCache.
//
// A search ranks the directory's agents and tools by the query's text and
// applies its filter; with federation auto or referrals it first asks the
// network (Deps.Finder, the federation's LookupCapability, as `find` and the
// listing's capability filter do) for the filter's capabilities, and for
// the text as a capability id when the directory has no match.
//
// An import (importer.go) fetches the catalog and each artifact with
// timeouts, size bounds and no redirect to another host, verifies each
// entry's trust manifests over the fetched bytes, refuses the entries
// none of whose manifests verifies (unless allowUnverified), and
// publishes an A2A card through the A2A import (its digest pinned) and a
// Server Card's streamable-http remote through the MCP import.
package aicatalog
