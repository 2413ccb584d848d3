package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: Write creates and replaces a file with the given mode and
// leaves no temporary file behind.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	for _, data := range []string{"one\n", "two\n"} {
		if err := Write(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		check(t, path, data, 0o600)
	}
	onlyFile(t, dir)
}

// TestCreate: Create writes a new file, refuses to replace one (the error
// wraps fs.ErrExist and the file is unchanged), and leaves no temporary
// file behind either way.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "identity.key")
	if err := Create(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(t, path, "first", 0o600)
	if err := Create(path, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing file: %v, want fs.ErrExist", err)
	}
	check(t, path, "first", 0o600)
	onlyFile(t, dir)
}

// TestWriteFails: a write that cannot be placed (the path is a directory)
// fails and removes its temporary file.
func TestWriteFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("x"), 0o600); err == nil {
		t.Fatal("Write over a directory succeeded")
	}
	onlyFile(t, dir)
}

func check(t *testing.T, path, want string, perm fs.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("%s holds %q, %v; want %q", path, got, err, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != perm {
		t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), perm)
	}
}

func onlyFile(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want one entry", names)
	}
}
