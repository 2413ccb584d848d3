package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// requestTimeout bounds one API call of a command; a capability search may
// wait for a DHT lookup, which the node bounds to a few seconds.
const requestTimeout = 30 * time.Second

// APIEnv names the node API a command talks to, like --api: a URL
// (http://host:port) or host:port.
const APIEnv = "LMOS_API"

// daemon is the running node a command talks to.
type daemon struct {
	// home is the command's home, "" when --api or $LMOS_API named the node.
	home   string
	apiURL string
	// http sends the API token (--token, $LMOS_API_TOKEN or the home's),
	// if any, with every request; api uses it.
	http *http.Client
	api  *apiclient.Client
}

// The commands that talk to the running node go through withDaemon (the
// node), daemon.call (one request: its context, its error explained),
// callDaemon (both) and query (callDaemon, then the answer printed by
// output); connectDaemon is called by withDaemon alone.

// withDaemon runs fn with the node the command talks to.
func withDaemon(cmd *cobra.Command, fn func(d *daemon) error) error {
	d, err := connectDaemon(cmd)
	if err != nil {
		return err
	}
	return fn(d)
}

// callDaemon runs fn, one request to the node the command talks to,
// within timeout; its error is explained. A stream fn opens after the
// request (a subscription, a session) runs on the command's own context.
func callDaemon(cmd *cobra.Command, timeout time.Duration, fn func(ctx context.Context, d *daemon) error) error {
	return withDaemon(cmd, func(d *daemon) error {
		return d.call(cmd, timeout, func(ctx context.Context) error { return fn(ctx, d) })
	})
}

// query asks the node the command talks to for a T (within
// requestTimeout) and prints it: as JSON with --json, else with text.
func query[T any](cmd *cobra.Command, get func(ctx context.Context, api *apiclient.Client) (T, error), text func(v T) error) error {
	return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
		v, err := get(ctx, d.api)
		if err != nil {
			return err
		}
		return output(cmd, v, text)
	})
}

// call runs fn, one request to d, in a context of the command that ends
// after timeout; fn's error is explained.
func (d *daemon) call(cmd *cobra.Command, timeout time.Duration, fn func(ctx context.Context) error) error {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	return d.explain(fn(ctx))
}

// connectDaemon finds the node a command talks to: the one --api or
// $LMOS_API names, else the one running in the command's home (its api
// file). The token is --token, else what node.LoadAPIToken finds.
func connectDaemon(cmd *cobra.Command) (*daemon, error) {
	apiURL, home, err := apiTarget(cmd)
	if err != nil {
		return nil, err
	}
	token, err := cmd.Flags().GetString("token")
	if err != nil {
		return nil, err
	}
	if token == "" && home != "" {
		if token, err = homedir.LoadAPIToken(home); err != nil {
			return nil, err
		}
	} else if token == "" {
		token = os.Getenv(config.APITokenEnv)
	}
	hc := httpapi.BearerClient(token)
	return &daemon{home: home, apiURL: apiURL, http: hc, api: apiclient.New(apiURL, hc)}, nil
}

// apiTarget resolves the node's API URL: --api, $LMOS_API, then the api
// file of the command's home (returned as home).
func apiTarget(cmd *cobra.Command) (apiURL, home string, err error) {
	flag := cmd.Flags().Lookup("api")
	if flag != nil && flag.Changed && flag.Value.String() != "" {
		u, err := normaliseAPIURL(flag.Value.String())
		if err != nil {
			return "", "", usageErrorf("--api: %w", err)
		}
		return u, "", nil
	}
	if s := os.Getenv(APIEnv); s != "" {
		u, err := normaliseAPIURL(s)
		if err != nil {
			return "", "", usageErrorf("$%s: %w", APIEnv, err)
		}
		return u, "", nil
	}
	if home, err = homeDir(cmd); err != nil {
		return "", "", err
	}
	apiURL, err = homeAPIURL(home)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", unavailable(fmt.Errorf("no running node in %s: start it with 'lmosnode up', or name a node's API with --api URL or $%s", home, APIEnv))
	}
	if err != nil {
		return "", "", err
	}
	return apiURL, home, nil
}

// homeAPIURL reads the URL of the API of the node running in home from
// its api file: with node.LoadAPIToken in connectDaemon, all a command
// reads of a home to reach its node.
func homeAPIURL(home string) (string, error) { return homedir.ReadAPIFile(home) }

// currentURL reads the node's API URL again from the api file of the
// home (a node that restarted may listen elsewhere).
func (d *daemon) currentURL() (string, error) { return homeAPIURL(d.home) }

// normaliseAPIURL accepts http(s)://host[:port][/path] or host:port (as
// the node's "api" setting is written); an unspecified host (0.0.0.0, ::)
// is reached on loopback.
func normaliseAPIURL(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: want http://host:port (or host:port)", strings.TrimPrefix(s, "http://"))
	}
	if host, port, err := net.SplitHostPort(u.Host); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			u.Host = net.JoinHostPort("127.0.0.1", port)
		}
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// explain turns a refused connection into the message of a node that is
// not running (its api file is left from a killed daemon), and a 401 into
// where the API token comes from. An error already classified (an
// exitError: explained before, or the answer of a Thing, whose 401 is not
// the node's) is left as it is.
func (d *daemon) explain(err error) error {
	if e := (*exitError)(nil); errors.As(err, &e) {
		return err
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		if d.home == "" {
			return unavailable(fmt.Errorf("no node answers at %s: %w", d.apiURL, err))
		}
		return unavailable(fmt.Errorf("no running node in %s (its api file names %s, which does not answer): start it with 'lmosnode up'", d.home, d.apiURL))
	}
	if p := (*lmosproto.Problem)(nil); errors.As(err, &p) && p.Status == http.StatusUnauthorized {
		where := "--token or $" + config.APITokenEnv
		if d.home != "" {
			where = fmt.Sprintf("--token, $%s, apiToken in %s or %s", config.APITokenEnv, filepath.Join(d.home, config.File), filepath.Join(d.home, homedir.APITokenFile))
		}
		return &exitError{code: exitForbidden, err: fmt.Errorf("%w: the node's API requires its token: give it with %s", err, where)}
	}
	return err
}
