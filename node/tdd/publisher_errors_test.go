package tdd_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// failingPublisher fails every call with err.
type failingPublisher struct{ err error }

func (p failingPublisher) Publish(context.Context, *lmosproto.TD, *directory.Local) (directory.Entry, directory.Change, error) {
	return directory.Entry{}, 0, p.err
}

func (p failingPublisher) Remove(context.Context, string) error { return p.err }

func TestPublisherErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		fields []string // of PUT /things and, prefixed with /td, of POST /api/v1/things
	}{
		{"validation", fmt.Errorf("sign thing: %w", lmosproto.ValidationErrors{{Pointer: "/title", Message: "bad"}}), 400, []string{"/title"}},
		{"stale", fmt.Errorf("put: %w", directory.ErrStale), 409, nil},
		{"closed", directory.ErrClosed, 503, nil},
		{"timeout", context.DeadlineExceeded, 504, nil},
		{"other", errors.New("disk on fire"), 500, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tddtest.NewEnv(t, func(d *tdd.Deps, _ *tdd.Config) { d.Publisher = failingPublisher{tc.err} })
			p := problem(t, do(t, http.MethodPut, env.URL+"/things/urn:x", thing{id: "urn:x", title: "X"}.json(t)), tc.status)
			if !slices.Equal(fields(p), tc.fields) {
				t.Errorf("PUT fields %v, want %v", fields(p), tc.fields)
			}
			body := `{"td":` + string(thing{id: "urn:x", title: "X"}.json(t)) + `}`
			p = problem(t, do(t, http.MethodPost, env.URL+"/api/v1/things", []byte(body)), tc.status)
			var want []string
			for _, f := range tc.fields {
				want = append(want, "/td"+f)
			}
			if !slices.Equal(fields(p), want) {
				t.Errorf("admin fields %v, want %v", fields(p), want)
			}
		})
	}
}
