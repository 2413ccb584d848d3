package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"

	"github.com/spf13/cobra"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Exit codes of lmosnode, documented in cmd/lmosnode/README.md and
// docs/deploy.md. A script tells the failures apart without parsing
// messages.
const (
	exitOK = 0
	// exitFailure is any other failure: an invalid TD, a proof that does
	// not verify, a refused request (400, 409, 422), a local I/O error.
	exitFailure = 1
	// exitUsage: unknown command or flag, wrong number of arguments, a
	// flag value out of range.
	exitUsage = 2
	// exitNotFound: the node answered 404 (no such Thing, group,
	// affordance), no Thing matches the name given, or find matched
	// nothing.
	exitNotFound = 3
	// exitForbidden: the node answered 401 (missing or wrong token) or 403
	// (not a member, not the owner, not loopback).
	exitForbidden = 4
	// exitUnavailable: no node is running or answers at the API URL, or
	// it answered 502/503 (the Thing's owner or backend cannot be
	// reached).
	exitUnavailable = 5
	// exitTimeout: the request or the node's call took too long (the
	// command's deadline, 504, 408).
	exitTimeout = 6
)

// exitError carries the exit code a failure maps to.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a usage error (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// unavailable marks err as "no node answers" (exit 5).
func unavailable(err error) error { return &exitError{code: exitUnavailable, err: err} }

// notFound marks err as "nothing found" (exit 3).
func notFound(err error) error { return &exitError{code: exitNotFound, err: err} }

// exitCode maps the error a command returned to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if e := (*exitError)(nil); errors.As(err, &e) {
		return e.code
	}
	if p := (*lmosproto.Problem)(nil); errors.As(err, &p) {
		switch p.Status {
		case http.StatusNotFound, http.StatusGone:
			return exitNotFound
		case http.StatusUnauthorized, http.StatusForbidden:
			return exitForbidden
		case http.StatusBadGateway, http.StatusServiceUnavailable:
			return exitUnavailable
		case http.StatusGatewayTimeout, http.StatusRequestTimeout:
			return exitTimeout
		}
		return exitFailure
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return exitTimeout
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return exitTimeout
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return exitUnavailable
	}
	return exitFailure
}

// runTracker records whether a command's RunE started: cobra reports
// every failure before that — unknown command or flag, bad flag value,
// wrong number of arguments, a missing required flag — without a type of
// its own, and each of them is a usage error.
type runTracker struct{ started bool }

// track wraps the RunE of root and every command below it.
func (t *runTracker) track(root *cobra.Command) {
	if runE := root.RunE; runE != nil {
		root.RunE = func(cmd *cobra.Command, args []string) error {
			t.started = true
			return runE(cmd, args)
		}
	}
	for _, sub := range root.Commands() {
		t.track(sub)
	}
}

// code is the exit code of err, the error of a run tracked by t.
func (t *runTracker) code(err error) int {
	if err != nil && !t.started {
		return exitUsage
	}
	return exitCode(err)
}
