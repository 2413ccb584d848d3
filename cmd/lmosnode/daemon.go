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

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/apiclient"
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
		if token, err = node.LoadAPIToken(home); err != nil {
			return nil, err
		}
	} else if token == "" {
		token = os.Getenv(node.APITokenEnv)
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
	apiURL, err = node.ReadAPIFile(home)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", unavailable(fmt.Errorf("no running node in %s: start it with 'lmosnode up', or name a node's API with --api URL or $%s", home, APIEnv))
	}
	if err != nil {
		return "", "", err
	}
	return apiURL, home, nil
}

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

// ctx scopes one API call.
func (d *daemon) ctx(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, requestTimeout)
}

// explain turns a refused connection into the message of a node that is
// not running (its api file is left from a killed daemon), and a 401 into
// where the API token comes from.
func (d *daemon) explain(err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		if d.home == "" {
			return unavailable(fmt.Errorf("no node answers at %s: %w", d.apiURL, err))
		}
		return unavailable(fmt.Errorf("no running node in %s (its api file names %s, which does not answer): start it with 'lmosnode up'", d.home, d.apiURL))
	}
	if p := (*lmosproto.Problem)(nil); errors.As(err, &p) && p.Status == http.StatusUnauthorized {
		where := "--token or $" + node.APITokenEnv
		if d.home != "" {
			where = fmt.Sprintf("--token, $%s, apiToken in %s or %s", node.APITokenEnv, filepath.Join(d.home, node.ConfigFile), filepath.Join(d.home, node.APITokenFile))
		}
		return fmt.Errorf("%w: the node's API requires its token: give it with %s", err, where)
	}
	return err
}
