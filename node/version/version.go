// Package version holds the lmosnode version, one value for the API, the
// CLI, libp2p identify and the MCP and tracing self-descriptions.
package version

import "runtime/debug"

// Version is the lmosnode version, reported by the API, the CLI and libp2p
// identify (user agent "lmosnode/<Version>"). Release builds set it with
//
//	go build -ldflags "-X github.com/lmosnode/lmosnode/node/version.Version=v1.2.3"
//
// Otherwise it comes from the Go build info: the module version when built
// with `go install …@version`, else "devel" plus the VCS revision.
var Version string

func init() {
	if Version == "" {
		Version = buildInfoVersion()
	}
}

func buildInfoVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return "devel+" + rev + dirty
}
