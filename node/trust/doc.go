// Package trust holds the operator's trust list: which publishers this
// node trusts, prefers and refuses (docs/api.md#trust). It owns the rule
// the rest of the node asks about a publisher, nothing else:
//
//   - Mark: what a user is shown beside a publisher — own, trusted
//     (allowed or preferred), denied or unknown;
//   - Admits: whether a record of the publisher may enter the directory:
//     not if denied, and with Config.OnlyTrusted only if trusted (or
//     own). The federation's intake drops the others, the gossip
//     validator ignores them (they are neither stored nor relayed, and the
//     peer that relayed them is not penalised: it may not share the list);
//   - Rank: how resolution and find order several publishers of one
//     Thing: own, then preferred, then allowed, then unknown.
//
// Entries name publishers (peer ID or did:key) or organisations (a
// did:web / did:wba DID, or a domain): an organisation's level applies to
// every publisher that is a verified member of it (SetMembership; the
// node wires node/did's Members, see docs/identity.md), unless the
// publisher is listed itself. A publisher proves membership once the
// organisation's DID document, resolved in the background, lists its key:
// until then organisation entries do not apply to it.
//
// A List is safe for concurrent use; its changes (Set, Remove) apply at
// once to every caller.
package trust
