// Package groups implements signed agent groups (docs/groups.md): a group's
// state is a hash-linked DAG of operations signed with eddsa-jcs-2022
// (genesis, add, remove, grant, revoke, policy, rename, leave, dissolve,
// uninvite),
// which every node folds deterministically to the same membership.
//
// The package is the model only: operations and their IDs, the log with its
// acceptance rules 1–4 and its bounded buffer of out-of-order operations, the
// fold, invitations, the messages of a group topic and the DHT record
// validator of the "lmos-group" namespace, and a node's cache of verified
// operations (OpCache), through which an operation is verified once however
// many log records repeat it. It does no I/O; the node wires it to gossip,
// the DHT and the datastore.
//
// Readings of docs/groups.md that the code fixes:
//
//   - Seniority decides concurrent conflicts: an operation loses its effect
//     when it is concurrent with its author's own leave, or with a remove
//     or revoke of its author signed by an admin more senior than the
//     author (the one who became admin earlier in the fold order, most
//     recently; the founder first), both read in the state at the
//     operation's place in the fold, whether or not that remove or revoke
//     had effect itself. Of two admins removing each other concurrently the
//     senior stays; a removed admin's "remove the remover" on parents from
//     before its removal has no effect.
//   - Op.Raw is the operation's JCS form (what its ID hashes), so the record
//     form of a log does not depend on how its operations were formatted.
//   - Operations other than a genesis may carry a "nonce"; Log.Sign adds one
//     only when the operation would otherwise repeat the ID of one it made.
//   - A full pending buffer drops the operation held longest.
//   - An invitation token holds a random secret; the signed invitation
//     holds its SHA-256, and an add embeds only the signed invitation, so
//     a log (public in the DHT) admits nobody. An uninvite voids every add
//     with its invitation that does not precede it (concurrent or later)
//     when its author is an admin at the add's place; an add whose
//     invitation was issued (proof created) at or before the added peer's
//     latest effective remove has no effect.
//
// A Log is safe for concurrent use. Ops, Invitations and States returned by
// the package must be treated as read-only (State is a deep copy).
package groups

import (
	"errors"
	"fmt"

	"github.com/lmosnode/lmosnode/proto"
)

// Limits and protocol names.
const (
	// MaxOpSize bounds one signed operation.
	MaxOpSize = 8 << 10
	// MaxLogOps bounds the number of operations of a log.
	MaxLogOps = 4096
	// MaxLogSize bounds the DHT record form of a log (Marshal).
	MaxLogSize = 2 << 20
	// MaxPending bounds the operations held until their parents arrive.
	MaxPending = 256
	// InvitePrefix starts every invitation token.
	InvitePrefix = "lmosgroup:"
	// ProtocolJoin is the libp2p protocol of a join request.
	ProtocolJoin = "/lmos/group/join/1.0.0"
	// ProtocolSync is the libp2p protocol that exchanges group logs.
	ProtocolSync = "/lmos/group/sync/1.0.0"
)

// Further limits (not in the contract, but checked).
const (
	// MaxRoleLen bounds a role label (characters).
	MaxRoleLen = 64
	// MaxNameLen bounds a group name (bytes).
	MaxNameLen = 256
	// MaxInvitationSize bounds the signed JSON of an invitation, so that it
	// fits into an add operation.
	MaxInvitationSize = 4 << 10
	// MaxTokenSize bounds the JSON of an invitation token (the signed
	// invitation, its secret and the hints).
	MaxTokenSize = 8 << 10
	// MaxPostSize bounds the body of a post on a group topic.
	MaxPostSize = 64 << 10
	// MaxMessageSize bounds a message on a group topic.
	MaxMessageSize = proto.MaxRecordSize + 1<<10
)

// Kind is the kind of an operation.
type Kind string

// The kinds of operations.
const (
	KindGenesis  Kind = "genesis"
	KindAdd      Kind = "add"
	KindRemove   Kind = "remove"
	KindGrant    Kind = "grant"
	KindRevoke   Kind = "revoke"
	KindPolicy   Kind = "policy"
	KindRename   Kind = "rename"
	KindLeave    Kind = "leave"
	KindDissolve Kind = "dissolve"
	KindUninvite Kind = "uninvite"
)

// Roles. RoleAdmin is the one role with powers; any other label (at most
// MaxRoleLen characters) is a plain member's.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Wire type names.
const (
	typeOp         = "lmos:GroupOp"
	typeInvitation = "lmos:GroupInvitation"
)

// Errors; every error of the package wraps one of them.
var (
	// ErrNotAuthorized: the author is not entitled to the operation in its
	// causal past (rule 4), or an invitation's issuer is no longer an admin
	// or it names another peer.
	ErrNotAuthorized = errors.New("not authorized")
	// ErrWrongGroup: the operation or invitation belongs to another group.
	ErrWrongGroup = errors.New("wrong group")
	// ErrBadOp: the operation is malformed or its proof does not verify.
	ErrBadOp = errors.New("bad operation")
	// ErrTooLarge: an operation, log, invitation or message exceeds its limit.
	ErrTooLarge = errors.New("too large")
	// ErrBadChain: a parent is missing (where it cannot be held), the
	// operation predates a parent, or a log is not in fold order.
	ErrBadChain = errors.New("bad chain")
	// ErrDuplicate: an operation appears twice in a log record.
	ErrDuplicate = errors.New("duplicate operation")
	// ErrExpired: the invitation has expired.
	ErrExpired = errors.New("invitation expired")
	// ErrLogFull: the log is at its limit (MaxLogOps or MaxLogSize).
	ErrLogFull = errors.New("log full")
	// ErrBadInvitation: the invitation token is malformed or its proof does
	// not verify.
	ErrBadInvitation = errors.New("bad invitation")
	// ErrSpent: an invitation's uses are spent (a single-use invitation
	// was already used).
	ErrSpent = errors.New("invitation already used")
	// ErrRevoked: an admin revoked the invitation (an uninvite operation).
	ErrRevoked = errors.New("invitation revoked")
	// ErrDissolved: the group is dissolved.
	ErrDissolved = errors.New("group dissolved")
	// ErrGroupFull: the group has reached its policy's maxMembers.
	ErrGroupFull = errors.New("group full")
	// ErrBadKey: a DHT key is not "/lmos-group/<group ID>".
	ErrBadKey = errors.New("bad group key")
	// ErrRetiredKey: the operation's author key was revoked or rotated
	// away from before the operation was created (OpCache.SetRetired).
	ErrRetiredKey = fmt.Errorf("%w: key retired", ErrNotAuthorized)
	// ErrBadMessage: a group topic message is malformed.
	ErrBadMessage = errors.New("bad group message")
)
