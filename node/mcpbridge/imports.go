package mcpbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Registrar publishes a Thing served by a backend and withdraws it;
// own.Things implements it (as for agents over WebSocket).
type Registrar interface {
	Register(ctx context.Context, td *lmosproto.TD, backend interact.Backend) error
	Unregister(ctx context.Context, thingID string) error
}

// Source is the MCP server of an import: a Streamable HTTP URL, or a
// command (and its arguments) that speaks MCP on stdio, launched and
// supervised by the node.
type Source struct {
	URL     string   `json:"url,omitempty"`
	Command []string `json:"command,omitempty"`
}

// Validate reports a source that is neither or both.
func (s Source) Validate() error {
	switch {
	case s.URL == "" && len(s.Command) == 0:
		return errors.New("an MCP server import needs url or command")
	case s.URL != "" && len(s.Command) > 0:
		return errors.New("an MCP server import takes url or command, not both")
	case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return fmt.Errorf("url %q: want an http:// or https:// URL", s.URL)
	case len(s.Command) > 0 && s.Command[0] == "":
		return errors.New("command: the program is empty")
	}
	return nil
}

// ID is the import's id: the first 12 hex digits of the SHA-256 of the
// source, so that importing the same server again is the same import.
func (s Source) ID() string {
	key := "url\n" + s.URL
	if len(s.Command) > 0 {
		key = "command\n" + strings.Join(s.Command, "\x00")
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:12]
}

// Import states.
const (
	StateConnecting   = "connecting"
	StateConnected    = "connected"
	StateDisconnected = "disconnected"
)

// ImportInfo describes an import (GET /api/v1/mcp/imports).
type ImportInfo struct {
	ID string `json:"id"`
	Source
	// State is connecting, connected or disconnected (then Error says
	// why, and the node retries with backoff).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Server is the MCP server's name and version from initialize.
	Server string `json:"server,omitempty"`
	// Things are the Things published for the server's tools.
	Things []ImportedThing `json:"things"`
}

// ImportedThing is one tool of an imported server as a Thing.
type ImportedThing struct {
	Tool    string `json:"tool"`
	ThingID string `json:"thingID"`
}

// ImportsConfig configures Imports.
type ImportsConfig struct {
	// File is where the imports are kept across restarts (the node's
	// home/mcp-imports.json); empty: not kept.
	File string
	// MinBackoff and MaxBackoff bound the delay before a reconnection.
	// Defaults 1 s and 1 min.
	MinBackoff, MaxBackoff time.Duration
	// FirstSync bounds how long Add waits for the first connection.
	// Default 30 s.
	FirstSync time.Duration
}

func (c ImportsConfig) withDefaults() ImportsConfig {
	if c.MinBackoff == 0 {
		c.MinBackoff = time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = time.Minute
	}
	if c.FirstSync == 0 {
		c.FirstSync = 30 * time.Second
	}
	return c
}

// Validate reports every field out of range.
func (c ImportsConfig) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"MinBackoff", c.MinBackoff}, {"MaxBackoff", c.MaxBackoff}, {"FirstSync", c.FirstSync}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("mcpbridge: imports: %s %v is negative", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// Imports holds the node's MCP server imports: one supervisor each. It
// is safe for concurrent use.
type Imports struct {
	reg Registrar
	cfg ImportsConfig
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // guards imports and the file
	imports map[string]*imported
}

// storedImport is an import as kept in ImportsConfig.File: the source,
// and the tools last published, so that a node restarted while the
// server is gone can withdraw their Things.
type storedImport struct {
	Source
	Tools []string `json:"tools,omitempty"`
}

// NewImports returns the imports, resuming those kept in cfg.File.
func NewImports(reg Registrar, cfg ImportsConfig, opts ...Option) (*Imports, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, errors.New("mcpbridge: imports: Registrar is nil")
	}
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	im := &Imports{reg: reg, cfg: cfg, log: o.log, imports: map[string]*imported{}}
	im.ctx, im.cancel = context.WithCancel(context.Background())
	stored, err := im.load()
	if err != nil {
		im.cancel()
		return nil, err
	}
	for _, s := range stored {
		im.start(s)
	}
	return im, nil
}

func (im *Imports) load() ([]storedImport, error) {
	if im.cfg.File == "" {
		return nil, nil
	}
	b, err := os.ReadFile(im.cfg.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: imports: %w", err)
	}
	var stored []storedImport
	if err := json.Unmarshal(b, &stored); err != nil {
		return nil, fmt.Errorf("mcpbridge: imports: %s: %w", im.cfg.File, err)
	}
	for i, s := range stored {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("mcpbridge: imports: %s: entry %d: %w", im.cfg.File, i, err)
		}
	}
	return stored, nil
}

// save writes the imports to the file; callers hold im.mu.
func (im *Imports) save() error {
	if im.cfg.File == "" {
		return nil
	}
	stored := make([]storedImport, 0, len(im.imports))
	for _, i := range im.imports {
		stored = append(stored, storedImport{Source: i.src, Tools: i.toolNames()})
	}
	slices.SortFunc(stored, func(a, b storedImport) int { return strings.Compare(a.ID(), b.ID()) })
	b, err := json.MarshalIndent(stored, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(im.cfg.File, append(b, '\n'), 0o600)
}

// start begins supervising s; callers hold im.mu or are NewImports.
func (im *Imports) start(s storedImport) *imported {
	i := newImported(im, s)
	im.imports[s.ID()] = i
	im.wg.Go(i.run)
	return i
}

// Add imports the MCP server src (an import of the same source is
// returned as it is) and waits, at most ImportsConfig.FirstSync, for its
// first connection.
func (im *Imports) Add(ctx context.Context, src Source) (ImportInfo, error) {
	if err := src.Validate(); err != nil {
		return ImportInfo{}, err
	}
	im.mu.Lock()
	i, ok := im.imports[src.ID()]
	if !ok {
		if im.ctx.Err() != nil {
			im.mu.Unlock()
			return ImportInfo{}, errors.New("mcpbridge: imports closed")
		}
		i = im.start(storedImport{Source: src})
		if err := im.save(); err != nil {
			im.mu.Unlock()
			return ImportInfo{}, fmt.Errorf("mcpbridge: keeping the import: %w", err)
		}
	}
	im.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, im.cfg.FirstSync)
	defer cancel()
	select {
	case <-i.firstTry:
	case <-wctx.Done():
	}
	return i.info(), nil
}

// List returns the imports, by id.
func (im *Imports) List() []ImportInfo {
	im.mu.Lock()
	all := make([]*imported, 0, len(im.imports))
	for _, i := range im.imports {
		all = append(all, i)
	}
	im.mu.Unlock()
	infos := make([]ImportInfo, 0, len(all))
	for _, i := range all {
		infos = append(infos, i.info())
	}
	slices.SortFunc(infos, func(a, b ImportInfo) int { return strings.Compare(a.ID, b.ID) })
	return infos
}

// ErrNoImport is Remove's error for an unknown id.
var ErrNoImport = errors.New("no such MCP server import")

// Remove stops the import id and withdraws its Things.
func (im *Imports) Remove(ctx context.Context, id string) error {
	im.mu.Lock()
	i, ok := im.imports[id]
	if ok {
		delete(im.imports, id)
	}
	var err error
	if ok {
		err = im.save()
	}
	im.mu.Unlock()
	if !ok {
		return fmt.Errorf("%q: %w", id, ErrNoImport)
	}
	i.stop()
	return errors.Join(err, i.withdrawAll(ctx))
}

// toolsChanged records the tools of an import in the file.
func (im *Imports) toolsChanged() {
	im.mu.Lock()
	defer im.mu.Unlock()
	if err := im.save(); err != nil {
		im.log.Warn("mcp imports not kept", "file", im.cfg.File, "err", err)
	}
}

// Close stops every supervisor; the Things stay published (a restarted
// node resumes the imports).
func (im *Imports) Close() error {
	im.cancel()
	im.wg.Wait()
	return nil
}
