// Package homedir is a node's home directory: where it is (Resolve: --home,
// $LMOS_HOME, ~/.lmosnode), what Init puts there, and each file's reader
// and writer:
//
//	config.json   the Config (package config), mode 0600
//	identity.key  the Ed25519 libp2p private key, mode 0600; LoadIdentity
//	              refuses a key that group or others may read; backed up and
//	              restored by ExportIdentity and ImportIdentity
//	api-token     the API's token (LoadOrCreateAPIToken; LoadAPIToken is
//	              what a client of the node sends), mode 0600
//	datastore/    the pebble datastore (package node/datastore)
//	keys/         the key records (rotations, revocations) the operator
//	              made for this node (SaveKeyRecord, KeyRecords), announced
//	              on every start; docs/identity.md
//	api           the URL of the running daemon's API (ReadAPIFile), only
//	              while it runs
//
// Init never overwrites a file, so it is safe to run on every start.
package homedir
