package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/homedir"
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
