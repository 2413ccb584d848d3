package homedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lmosnode/lmosnode/node/atomicfile"
)

// KeyRecordsDir holds the key records (rotations, revocations) the
// operator made for this node with `lmosnode key rotate` and `lmosnode key
// revoke`, one file each; the node announces them on every start.
const KeyRecordsDir = "keys"

// maxKeyRecordFile bounds a key record file (proto.MaxKeyRecordSize with
// room to spare).
const maxKeyRecordFile = 16 << 10

// SaveKeyRecord writes raw as home/keys/<name>.json (mode 0600).
func SaveKeyRecord(home, name string, raw []byte) error {
	dir := filepath.Join(home, KeyRecordsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("key records: %w", err)
	}
	path := filepath.Join(dir, name+".json")
	if err := atomicfile.Write(path, raw, 0o600); err != nil {
		return fmt.Errorf("key record %s: %w", path, err)
	}
	return nil
}

// LoadKeyRecord reads home/keys/<name>.json.
func LoadKeyRecord(home, name string) ([]byte, error) {
	path := filepath.Join(home, KeyRecordsDir, name+".json")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key record %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	data, err := readAllLimited(f, maxKeyRecordFile)
	if err != nil {
		return nil, fmt.Errorf("key record %s: %w", path, err)
	}
	return data, nil
}

// KeyRecords returns the contents of every home/keys/*.json, by name; a
// home without the directory has none.
func KeyRecords(home string) ([][]byte, error) {
	entries, err := os.ReadDir(filepath.Join(home, KeyRecordsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("key records: %w", err)
	}
	var out [][]byte
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		data, err := LoadKeyRecord(home, name)
		if err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	return slices.Clip(out), nil
}
