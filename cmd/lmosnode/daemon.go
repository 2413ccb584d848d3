package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/tdd"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// requestTimeout bounds one API call of a command; a capability search may
// wait for a DHT lookup, which the node bounds to a few seconds.
const requestTimeout = 30 * time.Second

// daemon is the running node a command talks to.
type daemon struct {
	home   string
	apiURL string
	// http sends the API token ($LMOS_API_TOKEN, the home's apiToken or
	// its api-token file) with every request; client and groups use it.
	http   *http.Client
	client *tdd.Client
	groups *groupapi.Client
}

// connectDaemon finds the running node of the command's home through its
// api file.
func connectDaemon(cmd *cobra.Command) (*daemon, error) {
	home, err := homeDir(cmd)
	if err != nil {
		return nil, err
	}
	apiURL, err := node.ReadAPIFile(home)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no running node in %s: start it with 'lmosnode up'", home)
	}
	if err != nil {
		return nil, err
	}
	token, err := node.LoadAPIToken(home)
	if err != nil {
		return nil, err
	}
	hc := httpapi.BearerClient(token)
	return &daemon{home: home, apiURL: apiURL, http: hc, client: tdd.NewClient(apiURL, hc), groups: groupapi.NewClient(apiURL, hc)}, nil
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
		return fmt.Errorf("no running node in %s (its api file names %s, which does not answer): start it with 'lmosnode up'", d.home, d.apiURL)
	}
	if p := (*lmosproto.Problem)(nil); errors.As(err, &p) && p.Status == http.StatusUnauthorized {
		return fmt.Errorf("%w: the node's API requires its token, which the CLI reads from $%s, else apiToken in %s, else %s: check that they hold the running node's token", err, node.APITokenEnv, filepath.Join(d.home, node.ConfigFile), filepath.Join(d.home, node.APITokenFile))
	}
	return err
}
