// Package didtest serves DID documents for tests: an HTTPS server on
// 127.0.0.1 with a certificate for a made-up domain, issued by a test CA
// made for the server, and the resolver options (dialer, root CAs) that
// reach it without real DNS.
package didtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/did"
)

// Server is an HTTPS server for Domain on 127.0.0.1.
type Server struct {
	// Domain is the made-up host name the certificate names.
	Domain string
	// Port is the port the server listens on (127.0.0.1).
	Port int
	// RootCAs holds the test CA; CAFile is its PEM file (for
	// NODE_EXTRA_CA_CERTS).
	RootCAs *x509.CertPool
	CAFile  string

	srv      *httptest.Server
	mu       sync.Mutex
	handlers map[string]http.Handler
}

// NewServer starts a server for domain, closed when the test ends.
func NewServer(t testing.TB, domain string) *Server {
	t.Helper()
	caCert, caKey := newCA(t)
	leaf := issue(t, caCert, caKey, domain)
	s := &Server{Domain: domain, RootCAs: x509.NewCertPool(), handlers: map[string]http.Handler{}}
	s.RootCAs.AddCert(caCert)
	s.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(s.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.Port = s.srv.Listener.Addr().(*net.TCPAddr).Port
	return s
}

// Handle serves body at path with the given Cache-Control ("" for none).
func (s *Server) Handle(path string, body []byte, cacheControl string) {
	s.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		w.Header().Set("Content-Type", "application/did+json")
		_, _ = w.Write(body)
	})
}

// HandleFunc serves path with h (for redirects, slow or large answers).
func (s *Server) HandleFunc(path string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[path] = h
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h, ok := s.handlers[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.ServeHTTP(w, r)
}

// DID is the bare-domain DID of the server with the given method ("web" or
// "wba"), its port percent-encoded: did:web:org.example%3A43211.
func (s *Server) DID(method string, path ...string) string {
	id := "did:" + method + ":" + s.Domain + "%3A" + strconv.Itoa(s.Port)
	for _, p := range path {
		id += ":" + p
	}
	return id
}

// DialContext dials the server for any port of Domain and refuses every
// other host: no test reaches real DNS through it.
func (s *Server) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(host, s.Domain) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "not the test domain", Name: host, IsNotFound: true}}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.srv.Listener.Addr().String())
}

// Options returns resolver options that reach this server.
func (s *Server) Options() did.Options {
	return did.Options{DialContext: s.DialContext, RootCAs: s.RootCAs}
}

func newCA(t testing.TB) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lmosnode test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func issue(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, domain string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: domain},
		DNSNames:     []string{domain},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key}
}
