package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/homedir"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestKeyExportImport: a key exported from one home and imported into an
// empty one gives the same peer ID; a home with another key keeps it
// unless --force; openssl, when installed, reads the export.
func TestKeyExportImport(t *testing.T) {
	t.Setenv(APIEnv, "")
	a, b := t.TempDir(), filepath.Join(t.TempDir(), "restored")
	mustRun(t, "init", "--home", a)
	idA := firstLine(mustRun(t, "id", "--home", a), "peer ID: ")

	pemOut := mustRun(t, "key", "export", "--home", a)
	if !strings.HasPrefix(pemOut, "-----BEGIN PRIVATE KEY-----\n") {
		t.Fatalf("export:\n%s", pemOut)
	}
	file := filepath.Join(t.TempDir(), "key.pem")
	mustRun(t, "key", "export", "--out", file, "--home", a)
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export --out: %v %v", err, fi)
	}
	if _, _, code := lmosnode(t, "", "key", "export", "--out", file, "--home", a); code != exitFailure {
		t.Errorf("export over an existing file: exit %d, want 1", code)
	}

	mustRun(t, "key", "import", file, "--home", b)
	if got := firstLine(mustRun(t, "id", "--home", b), "peer ID: "); got != idA {
		t.Errorf("after import: %s, want %s", got, idA)
	}
	if _, _, code := lmosnode(t, pemOut, "key", "import", "-", "--home", b); code != 0 {
		t.Errorf("importing the same key again from stdin: exit %d", code)
	}

	other := t.TempDir()
	mustRun(t, "init", "--home", other)
	idOther := firstLine(mustRun(t, "id", "--home", other), "peer ID: ")
	if _, errOut, code := lmosnode(t, "", "key", "import", file, "--home", other); code != exitFailure || !strings.Contains(errOut, "--force") {
		t.Errorf("import over another key: exit %d, %q", code, errOut)
	}
	if got := firstLine(mustRun(t, "id", "--home", other), "peer ID: "); got != idOther {
		t.Errorf("a refused import changed the key: %s", got)
	}
	mustRun(t, "key", "import", file, "--force", "--home", other)
	if got := firstLine(mustRun(t, "id", "--home", other), "peer ID: "); got != idA {
		t.Errorf("after import --force: %s, want %s", got, idA)
	}
	// identity.key itself is accepted too.
	raw := filepath.Join(a, homedir.IdentityFile)
	c := t.TempDir()
	mustRun(t, "key", "import", raw, "--home", c)
	if got := firstLine(mustRun(t, "id", "--home", c), "peer ID: "); got != idA {
		t.Errorf("import of identity.key: %s, want %s", got, idA)
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	_ = os.WriteFile(bad, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), 0o600)
	if _, _, code := lmosnode(t, "", "key", "import", bad, "--home", t.TempDir()); code != exitFailure {
		t.Errorf("import of a certificate: exit %d, want 1", code)
	}

	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Log("openssl not installed: the export is not checked by an independent reader")
		return
	}
	out, err := exec.Command(openssl, "pkey", "-in", file, "-noout", "-text").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ED25519 Private-Key") {
		t.Errorf("openssl pkey: %v\n%s", err, out)
	}
}

// TestKeyRotateRevoke: key rotate gives the home a new identity and keeps
// a rotation record from the old one; key revoke revokes the old key,
// signed by the new one, or a key file's key, signed by itself; a home
// that rotated nothing has nothing to revoke without --key-file.
func TestKeyRotateRevoke(t *testing.T) {
	t.Setenv(APIEnv, "")
	home := t.TempDir()
	mustRun(t, "init", "--home", home)
	peerID := func(home string) string {
		return strings.TrimPrefix(firstLine(mustRun(t, "id", "--home", home), "peer ID: "), "peer ID: ")
	}
	old := peerID(home)
	var rot keyRecordOut
	if err := json.Unmarshal([]byte(mustRun(t, "key", "rotate", "--json", "--home", home)), &rot); err != nil {
		t.Fatal(err)
	}
	if rot.Key != old || rot.Successor == "" || rot.Successor == old {
		t.Fatalf("rotate: %+v (old %s)", rot, old)
	}
	if got := peerID(home); got != rot.Successor {
		t.Fatalf("identity after the rotation: %s, want %s", got, rot.Successor)
	}
	if rec, err := lmosproto.ParseKeyRecord(rot.Record); err != nil || rec.Key.String() != old {
		t.Fatalf("rotation record: %v", err)
	}
	if _, err := homedir.LoadKeyRecord(home, "rotation-"+old); err != nil {
		t.Fatal(err)
	}

	var rev keyRecordOut
	if err := json.Unmarshal([]byte(mustRun(t, "key", "revoke", "--reason", "leaked", "--json", "--home", home)), &rev); err != nil {
		t.Fatal(err)
	}
	if rec, err := lmosproto.ParseKeyRecord(rev.Record); err != nil || !rec.Revocation() || rec.Key.String() != old || rec.Successor.String() != rot.Successor {
		t.Fatalf("revocation by the successor: %+v, %v", rec, err)
	}

	other := t.TempDir()
	mustRun(t, "init", "--home", other)
	if _, errOut, code := lmosnode(t, "", "key", "revoke", "--home", other); code != exitFailure || !strings.Contains(errOut, "rotate first") {
		t.Errorf("revoke without a rotation: exit %d, %q", code, errOut)
	}
	keyFile := filepath.Join(t.TempDir(), "leaked.pem")
	mustRun(t, "key", "export", "--out", keyFile, "--home", other)
	otherID := peerID(other)
	if err := json.Unmarshal([]byte(mustRun(t, "key", "revoke", "--key-file", keyFile, "--json", "--home", home)), &rev); err != nil {
		t.Fatal(err)
	}
	if rec, err := lmosproto.ParseKeyRecord(rev.Record); err != nil || rec.Key.String() != otherID || rec.Rotation != nil {
		t.Fatalf("revocation of a key file: %+v, %v", rec, err)
	}
	if recs, err := homedir.KeyRecords(home); err != nil || len(recs) != 3 {
		t.Fatalf("the home keeps %d key records (%v), want 3", len(recs), err)
	}
}
