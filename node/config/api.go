package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// The values of APIAuth.RequireTokenFor.
const (
	// TokenForAdmin requires the token for the requests that act as the
	// node; reads and invocations are open to local clients.
	TokenForAdmin = "admin"
	// TokenForAll requires the token for every request.
	TokenForAll = "all"
)

// APIAuth says which requests to the API must carry its token.
type APIAuth struct {
	// RequireTokenFor is TokenForAdmin or TokenForAll. Empty, the default:
	// "all" when the API is not on a loopback address or APIToken is set
	// (a configured token has always guarded every request), else "admin":
	// every local process may read the directory and call Things, only
	// those with the token (the CLI, and scripts that read it) may act as
	// the node. "admin" is refused for a non-loopback API.
	RequireTokenFor string `json:"requireTokenFor,omitempty"`
}

// TokenForAllRequests reports whether every request must carry the token under c.
func (c Config) TokenForAllRequests() bool {
	switch c.APIAuth.RequireTokenFor {
	case TokenForAll:
		return true
	case TokenForAdmin:
		return false
	}
	loopback, err := APIAddrIsLoopback(c.API)
	return c.APIToken != "" || err != nil || !loopback
}

func (a APIAuth) validate(loopback bool) error {
	switch a.RequireTokenFor {
	case "", TokenForAll:
		return nil
	case TokenForAdmin:
		if !loopback {
			return errors.New(`requireTokenFor: "admin" needs the api on a loopback address: other machines must send the token for every request`)
		}
		return nil
	}
	return fmt.Errorf("requireTokenFor: %q: want %q or %q", a.RequireTokenFor, TokenForAdmin, TokenForAll)
}

// APILimits bounds what one client may hold of the API (docs/api.md#limits).
// A zero field is its default; every field must be zero or positive.
type APILimits struct {
	// ReadHeaderTimeout bounds the arrival of a request's headers.
	// Default 10 s.
	ReadHeaderTimeout Duration `json:"readHeaderTimeout,omitzero"`
	// BodyTimeout bounds the arrival of a request's body after its
	// headers; a client too slow is cut off. Event streams, WebSockets and
	// streaming (NDJSON) invocations are not bounded by it. Default 30 s.
	BodyTimeout Duration `json:"bodyTimeout,omitzero"`
	// IdleTimeout closes a kept-alive connection idle for that long.
	// Default 2 min.
	IdleTimeout Duration `json:"idleTimeout,omitzero"`
	// MaxHeaderBytes bounds the request line and headers; above it the
	// answer is 431. Default 64 KiB.
	MaxHeaderBytes int `json:"maxHeaderBytes,omitzero"`
	// MaxBodyBytes bounds any request body; above it (or the smaller
	// limit of the route) the answer is 413. Default 8 MiB.
	MaxBodyBytes int64 `json:"maxBodyBytes,omitzero"`
	// MaxConnsPerClient caps the open connections of one client IP
	// address; those over it are closed at once. Default 64.
	MaxConnsPerClient int `json:"maxConnsPerClient,omitzero"`
	// LimitLoopback applies MaxConnsPerClient to loopback clients too.
	// Off by default: every local process (CLI, agents, browser) shares
	// 127.0.0.1 and would share one budget.
	LimitLoopback bool `json:"limitLoopback,omitzero"`
}

// DefaultAPILimits are the defaults documented at APILimits.
func DefaultAPILimits() APILimits {
	return APILimits{
		ReadHeaderTimeout: Duration(10 * time.Second),
		BodyTimeout:       Duration(httpapi.DefaultBodyTimeout),
		IdleTimeout:       Duration(2 * time.Minute),
		MaxHeaderBytes:    64 << 10,
		MaxBodyBytes:      httpapi.DefaultMaxBody,
		MaxConnsPerClient: httpapi.DefaultMaxConnsPerClient,
	}
}

func (l APILimits) WithDefaults() APILimits {
	def := DefaultAPILimits()
	for _, f := range []struct{ v, d *Duration }{{&l.ReadHeaderTimeout, &def.ReadHeaderTimeout}, {&l.BodyTimeout, &def.BodyTimeout}, {&l.IdleTimeout, &def.IdleTimeout}} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = def.MaxHeaderBytes
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = def.MaxBodyBytes
	}
	if l.MaxConnsPerClient == 0 {
		l.MaxConnsPerClient = def.MaxConnsPerClient
	}
	return l
}

func (l APILimits) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"readHeaderTimeout", int64(l.ReadHeaderTimeout)}, {"bodyTimeout", int64(l.BodyTimeout)}, {"idleTimeout", int64(l.IdleTimeout)},
		{"maxHeaderBytes", int64(l.MaxHeaderBytes)}, {"maxBodyBytes", l.MaxBodyBytes}, {"maxConnsPerClient", int64(l.MaxConnsPerClient)},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: %d is negative", f.name, f.v)
		}
	}
	return nil
}
