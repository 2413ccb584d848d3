package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/internal/dircorpus"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/datastore"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/homedir"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// batch is how many Things one PutMany writes.
const batch = 1000

// runFill writes the corpus's first n Things into the directory of a node
// home, as the node would have stored them had it learned them: each
// record signed by its publisher, put with the node's own directory
// settings (config.json and the environment), so that its budget applies.
func runFill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ContinueOnError)
	home := fs.String("home", "", "the node's home (lmosnode init)")
	n := fs.Int("n", 100_000, "Things to write")
	tdFile := fs.String("td", "examples/things/weather-agent.json", "the TD every Thing is made from")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *home == "" {
		return errors.New("fill: -home is required")
	}
	raw, err := os.ReadFile(*tdFile)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	base, err := lmosproto.ParseTD(raw)
	if err != nil {
		return fmt.Errorf("fill: %s: %w", *tdFile, err)
	}
	cfg, err := config.Load(*home)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	key, err := homedir.LoadIdentity(*home)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	self, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	store, err := datastore.Open(datastore.Deps{Self: self},
		datastore.Config{Dir: filepath.Join(*home, homedir.DatastoreDir), CacheMB: cfg.Datastore.CacheMB})
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	dir, err := directory.Open(directory.Deps{Datastore: store, Self: self}, cfg.Directory())
	if err != nil {
		return errors.Join(fmt.Errorf("fill: %w", err), store.Close())
	}
	err = fill(dir, base, *n)
	return errors.Join(err, dir.Close(), store.Close())
}

// fill generates the Things in order and signs each batch on every core.
func fill(dir *directory.Directory, base *lmosproto.TD, n int) error {
	c, err := dircorpus.New()
	if err != nil {
		return err
	}
	start := time.Now()
	tds := make([]*lmosproto.TD, batch)
	keys := make([]ed25519.PrivateKey, batch)
	recs := make([]*lmosproto.Record, batch)
	errs := make([]error, batch)
	workers := runtime.GOMAXPROCS(0)
	for done := 0; done < n; {
		m := min(batch, n-done)
		for i := range m {
			tds[i], keys[i] = c.NextTD(base)
		}
		at := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < m; i += workers {
					recs[i], errs[i] = lmosproto.SignThing(tds[i], keys[i], at)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs[:m]...); err != nil {
			return fmt.Errorf("fill: sign: %w", err)
		}
		changes, err := dir.PutMany(recs[:m])
		if err != nil {
			return fmt.Errorf("fill: put: %w", err)
		}
		for i, ch := range changes {
			if ch == directory.OverQuota || ch == directory.OverBudget {
				return fmt.Errorf("fill: %s of %s: %s (raise quota.maxThings, quota.maxBytes, quota.maxLearnedBytes)",
					recs[i].ThingID, recs[i].Publisher(), ch)
			}
		}
		done += m
		if done%50_000 == 0 || done == n {
			fmt.Printf("  %d Things written, %.0f a second\n", done, float64(done)/time.Since(start).Seconds())
		}
	}
	return nil
}
