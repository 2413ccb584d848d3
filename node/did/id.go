package did

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Methods this package resolves.
const (
	MethodWeb = "web"
	MethodWBA = "wba"
)

// ErrUnsupported is wrapped by Parse's error for a DID whose method this
// package does not resolve.
var ErrUnsupported = errors.New("did: unsupported method")

// ID is a parsed did:web or did:wba DID.
type ID struct {
	// DID is the DID as given.
	DID string
	// Method is MethodWeb or MethodWBA.
	Method string
	// Host is the lower-cased host name, without the port.
	Host string
	// Port is the port, 0 for the default (443).
	Port int
	// Path holds the path segments (empty for a bare-domain DID).
	Path []string
}

// hostLabel is one label of an RFC 1123 host name.
var hostLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// pathSegment is one path segment of a did:wba DID (ANP did:wba §2.2).
var pathSegment = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Parse reads a did:web or did:wba DID (a DID URL's fragment or query is
// not allowed: pass the DID). The host must be a domain name, not an IP
// address.
func Parse(s string) (ID, error) {
	rest, ok := strings.CutPrefix(s, "did:")
	if !ok {
		return ID{}, fmt.Errorf("did: %q is not a DID", s)
	}
	method, msid, ok := strings.Cut(rest, ":")
	if !ok || msid == "" {
		return ID{}, fmt.Errorf("did: %q has no method-specific identifier", s)
	}
	if method != MethodWeb && method != MethodWBA {
		return ID{}, fmt.Errorf("%w %q (want did:web or did:wba)", ErrUnsupported, method)
	}
	if strings.ContainsAny(msid, "#?/") {
		return ID{}, fmt.Errorf("did: %q: a DID has no path, query or fragment here", s)
	}
	parts := strings.Split(msid, ":")
	id := ID{DID: s, Method: method}
	if err := id.parseAuthority(parts[0]); err != nil {
		return ID{}, fmt.Errorf("did: %q: %w", s, err)
	}
	for _, seg := range parts[1:] {
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == "" || dec == "." || dec == ".." || strings.ContainsAny(dec, "/\\") {
			return ID{}, fmt.Errorf("did: %q: bad path segment %q", s, seg)
		}
		if method == MethodWBA && !pathSegment.MatchString(seg) {
			return ID{}, fmt.Errorf("did: %q: path segment %q has characters did:wba does not allow", s, seg)
		}
		id.Path = append(id.Path, dec)
	}
	return id, nil
}

// parseAuthority reads "host" or "host%3Aport".
func (id *ID) parseAuthority(enc string) error {
	auth, err := url.PathUnescape(enc)
	if err != nil {
		return fmt.Errorf("bad percent-encoding in %q", enc)
	}
	host, port := auth, ""
	if i := strings.LastIndexByte(auth, ':'); i >= 0 {
		host, port = auth[:i], auth[i+1:]
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || strings.HasPrefix(port, "0") {
			return fmt.Errorf("bad port %q", port)
		}
		id.Port = p
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if net.ParseIP(strings.Trim(host, "[]")) != nil {
		return fmt.Errorf("host %q is an IP address; did:%s needs a domain name", host, id.Method)
	}
	if len(host) > 253 || !strings.Contains(host, ".") {
		return fmt.Errorf("host %q is not a fully qualified domain name", host)
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if !hostLabel.MatchString(l) {
			return fmt.Errorf("host %q is not a domain name", host)
		}
	}
	if _, err := strconv.Atoi(labels[len(labels)-1]); err == nil {
		return fmt.Errorf("host %q ends in a number; not a domain name", host)
	}
	id.Host = host
	return nil
}

// HostPort is the host with its port, as dialled ("example.com:443").
func (id ID) HostPort() string {
	port := id.Port
	if port == 0 {
		port = 443
	}
	return net.JoinHostPort(id.Host, strconv.Itoa(port))
}

// Domain is the host name the DID is anchored in (no port): what a user is
// shown as the organisation.
func (id ID) Domain() string { return id.Host }

// URL is the HTTPS URL of the DID's document: /.well-known/did.json for a
// bare domain, /<path>/did.json otherwise (did:web §3.2.2, did:wba §2.5.2).
func (id ID) URL() string {
	u := url.URL{Scheme: "https", Host: id.Host}
	if id.Port != 0 {
		u.Host = id.HostPort()
	}
	if len(id.Path) == 0 {
		u.Path = "/.well-known/did.json"
	} else {
		u.Path = "/" + strings.Join(id.Path, "/") + "/did.json"
	}
	return u.String()
}

// E1Fingerprint returns the fingerprint of a did:wba path DID whose last
// segment is "e1_<fingerprint>" (ANP did:wba §2.2.1), and false for any
// other DID.
func (id ID) E1Fingerprint() (string, bool) {
	if id.Method != MethodWBA || len(id.Path) == 0 {
		return "", false
	}
	fp, ok := strings.CutPrefix(id.Path[len(id.Path)-1], "e1_")
	return fp, ok && len(fp) == 43
}
