// Package directory is a node's persistent directory of Things: the Things
// the node publishes itself (authoritative, never expiring) and the Things it
// learned from other publishers (cached until they expire), with the
// queries, indexes and change events that the node's discovery API is built
// on.
//
// # Identity and order
//
// A Thing is keyed by (publisher, thing id). Records of different publishers
// are never merged: a peer can neither overwrite, shadow nor delete another
// peer's Thing, even when both use the same id. For one key the directory
// holds the newest record by proto.Record.Newer; an older record never
// replaces a newer one. A tombstone is kept (hidden from queries) until it
// expires, so that an older version arriving late is still refused.
//
// Put trusts its caller to have verified the record (proto.ParseRecord);
// the directory stores the signed bytes as they are and does not verify them
// again when it loads them.
//
// # Quotas and liveness
//
// Per publisher of learned entries the directory counts the entries held
// and the bytes of their records, and refuses (ErrQuota, OverQuota) a
// record that would take the publisher over Config.MaxThingsPerPublisher
// or MaxBytesPerPublisher; own Things count against neither. It also keeps
// when the publisher was last seen (Seen, and the proof time of each
// record put): an entry is Online while that is within
// Config.OfflineAfter, queries rank online entries first and can select
// them (Query.Online), and with Config.OfflineTTL the purge loop drops the
// learned entries of a publisher unseen that long. Liveness is memory
// only: after Open every publisher counts as unseen and has OfflineTTL of
// grace from then.
//
// # Budget
//
// Quotas bound one publisher; sybils (many fresh identities) multiply
// them. Config.MaxLearnedBytes bounds the signed bytes of all learned
// entries together. A learned record that would go over it evicts learned
// entries less valuable than itself, by Value: a Thing of a publisher the
// trust list allows or prefers (ValueTrusted) outranks one of a group
// this node is in (ValueMember), which outranks one used within RecentUse
// (ValueUsed: Use, a lookup's Put with Used), which outranks one of an
// online publisher (ValueOnline); of equal value the least recently used
// goes first. If the less valuable Things do not make room, the newcomer
// is refused (OverBudget, ErrBudget). A Thing is only ever evicted for a
// more valuable one, so a refused or evicted record that arrives again by
// gossip displaces nothing of its own value: eviction does not thrash.
// Own Things are never evicted. Eviction deletes the entry (thing_deleted)
// and tells the OnEvict hook, so that a lookup asks the network again for
// the keys of what went (node/federation); the Thing is fetched again on
// demand. The node sets the Valuer (SetValuer) from its trust list, group
// service and connections.
//
// # Storage layout
//
// The directory keeps its state in a go-datastore under "/directory":
//
//	/directory/version                          "1", the layout version
//	/directory/run                              present between BeginRun and EndRun
//	/directory/things/<peer ID>/<base32(id)>    one envelope per (publisher, id)
//
// <peer ID> is the publisher's base58 peer ID; the thing id is encoded in
// lowercase RFC 4648 base32 without padding, so that any id (URNs, URLs with
// slashes, dots) is one key segment. An envelope (codec.go) is a small
// binary record: a format byte, flags (own, tombstone), the sequence number
// and proof time, the registration times (created, modified, expires in
// whole seconds, as memory holds them; the TTL, which Open leaves for the
// node's setting), the thing id, the node-local metadata as JSON, a
// summary of the fields the indexes need (title, description, types,
// vendor, capabilities, groups) and finally the signed record exactly as
// published. The summary lets Open
// rebuild the indexes without parsing every TD.
//
// Every write is committed in one batch (several of at most 1 MiB each
// for a larger write: pebble would hold a large batch in memory until it
// is flushed) and followed by Sync before Put returns, so a node killed with -9 still has every Thing it acknowledged.
// Puts that wait for the writer together are committed in one batch (group
// commit: one fsync for all of them), each with the change it would have
// had alone, in the order they queued. The in-memory form of a new entry
// (tokens, term frequencies) is built while its batch is written; memory
// changes only once the batch is durable, so queries never see a Thing
// that is not.
//
// # Memory
//
// Records live in the datastore; the heap keeps the indexes. Per Thing
// it holds its key, version, registration times, title (interned: it
// orders results), groups (visibility), the record's size and hash, and
// its postings in the inverted indexes (type, capability with the
// parsed version, vendor, publisher, group, text tokens; at most 512
// distinct terms per Thing). The types, vendor and capabilities an
// entry shows are read from the stored envelope's summary when an entry
// is made — for the page of a query, an event, a Get — through a bounded
// cache of the most recent 32768 (details); signed TDs are read when
// served (Entry.Raw, Entry.Record, Entry.TD). A Thing leaves the indexes
// by its summary, read back before its record is replaced or deleted
// (one read per update, as the update event's previous record needs
// anyway), so no per-Thing list of terms is kept. The event history keeps
// the records of its newest events only, up to 4 MiB.
// BenchmarkHeapPerByte measures the heap held per byte of learned
// records (issue 24 bounds it to 2); BenchmarkTable the heap per 1,000
// Things (docs/performance.md, row 5).
//
// # Paging
//
// Search pages by Offset and Limit, or by cursor: Result.Next (and
// Query.CursorAfter of any entry returned) is an opaque cursor of the
// sort key of the page's last entry, and Query.After continues with the
// results ordered after it, so a page deep in a listing costs what the
// first page does (cursor.go).
//
// # Concurrency
//
// A Directory is safe for concurrent use. Writers (Put, PutMany, Purge) are
// serialised (concurrent Puts share a batch, above); queries run concurrently with each other and with a writer's
// durable write, and wait only while a writer swaps its result into memory.
// Entries are snapshots: they stay valid after the Thing changes. The
// directory owns one long-lived goroutine, the purge loop started by Open
// and stopped by Close; the workers Open decodes stored entries with end
// before Open returns, and the goroutine a write commits its batch in
// before the write returns.
package directory
