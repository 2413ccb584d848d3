package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/rotation/rotate"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// keyRecordOut is what key rotate and key revoke print with --json.
type keyRecordOut struct {
	// Key is the key retired, Successor its successor ("" if none).
	Key       string `json:"key"`
	Successor string `json:"successor,omitempty"`
	// Things is how many own Things a rotation re-signed.
	Things int `json:"things,omitempty"`
	// Record is the signed key record.
	Record json.RawMessage `json:"record"`
}

func newKeyRotateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the identity key (node stopped); announced at the next start",
		Long: `rotate replaces the identity key of the node in --home, which must be
stopped: the peer ID changes with the key, and the libp2p host can only
take a new one when it starts. It signs a rotation record with the old key
and the new one (kept in the home's keys/ directory), re-signs the node's
own Things under the new key and makes the new key the identity. At its
next start the node announces the rotation: other nodes drop the Things of
the old key, move their trust list entry to the new one, and the admins of
its groups move its memberships (docs/identity.md). An interrupted rotation
is finished by running rotate again.`,
		Example: `  lmosnode key rotate --home /var/lib/lmosnode && systemctl start lmosnode`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			res, err := rotate.Home(home, time.Now())
			if err != nil {
				return err
			}
			out := keyRecordOut{Key: res.Old.String(), Successor: res.New.String(), Things: res.Things, Record: res.Record.Raw}
			return output(cmd, out, func(keyRecordOut) error {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "rotated %s\n     to %s (%d own Things re-signed)\nthe node announces the rotation at its next start\n",
					res.Old, res.New, res.Things)
				return err
			})
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

func newKeyRevokeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke [PEER-ID]",
		Short: "Revoke a leaked key; announced at the next start",
		Long: `revoke signs the revocation of a leaked key and keeps it in the home's keys/
directory; the node announces it at its next start, and from then on every
node that learns it refuses what the key signs (Things, group operations
made after the revocation). Without --key-file it revokes a key this node
rotated away from (PEER-ID, by default the one rotated last), signed by
the current key with the rotation attached: rotate first, then revoke.
With --key-file it revokes the key in FILE (a PKCS #8 PEM export or an
identity.key), signed by that key itself.`,
		Example: `  lmosnode key rotate && lmosnode key revoke --reason "backup tape lost"`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			reason, _ := cmd.Flags().GetString("reason")
			keyFile, _ := cmd.Flags().GetString("key-file")
			var rec *lmosproto.KeyRecord
			if keyFile != "" {
				rec, err = revokeKeyFile(keyFile, reason)
			} else {
				rec, err = revokeRotated(home, args, reason)
			}
			if err != nil {
				return err
			}
			if err := homedir.SaveKeyRecord(home, "revocation-"+rec.Key.String(), rec.Raw); err != nil {
				return err
			}
			out := keyRecordOut{Key: rec.Key.String(), Successor: rec.Successor.String(), Record: rec.Raw}
			return output(cmd, out, func(keyRecordOut) error {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\nthe node announces the revocation at its next start\n", rec.Key)
				return err
			})
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	cmd.Flags().String("reason", "", "why (at most 256 bytes, shown to operators)")
	cmd.Flags().String("key-file", "", "revoke the key in this file, signed by itself")
	return cmd
}

// revokeKeyFile signs the revocation of the key in path by itself.
func revokeKeyFile(path, reason string) (*lmosproto.KeyRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := homedir.ParseIdentity(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	signing, err := homedir.SigningKey(key)
	if err != nil {
		return nil, err
	}
	return lmosproto.SignRevocation(signing, nil, reason, time.Now())
}

// revokeRotated signs, with the home's key, the revocation of the key it
// rotated away from: args[0], or the one rotated last.
func revokeRotated(home string, args []string, reason string) (*lmosproto.KeyRecord, error) {
	key, err := homedir.LoadIdentity(home)
	if err != nil {
		return nil, err
	}
	self, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, err
	}
	raws, err := homedir.KeyRecords(home)
	if err != nil {
		return nil, err
	}
	var rot *lmosproto.KeyRecord
	for _, raw := range raws {
		r, err := lmosproto.ParseKeyRecord(raw)
		if err != nil || r.Revocation() || r.Successor != self {
			continue
		}
		if (len(args) == 1 && r.Key.String() == args[0]) || (len(args) == 0 && (rot == nil || r.Created.After(rot.Created))) {
			rot = r
		}
	}
	if rot == nil {
		return nil, errors.New("key revoke: this home holds no rotation to the current key of that key; rotate first, or revoke with --key-file")
	}
	signing, err := homedir.SigningKey(key)
	if err != nil {
		return nil, err
	}
	return lmosproto.SignRevocation(signing, rot, reason, time.Now())
}
