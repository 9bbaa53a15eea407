package docker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEngine is an engine at the process boundary: a TLS server that requires a client certificate of its CA,
// answers the ping with API version 1.41, and records the image pulls it gets.
type fakeEngine struct {
	url     string
	certDir string // ca.pem, cert.pem, key.pem for a client
	mu      sync.Mutex
	pulls   []*http.Request
}

func newFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage) tls.Certificate {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	f := &fakeEngine{certDir: t.TempDir()}
	client := issue(3, x509.ExtKeyUsageClientAuth)
	keyDER, _ := x509.MarshalPKCS8PrivateKey(client.PrivateKey)
	for name, block := range map[string]*pem.Block{"ca.pem": {Type: "CERTIFICATE", Bytes: caDER},
		"cert.pem": {Type: "CERTIFICATE", Bytes: client.Certificate[0]}, "key.pem": {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(f.certDir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		switch {
		case r.URL.Path == "/_ping" || strings.HasSuffix(r.URL.Path, "/_ping"):
			_, _ = w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/images/create"):
			f.mu.Lock()
			f.pulls = append(f.pulls, r)
			f.mu.Unlock()
			_, _ = w.Write([]byte(`{"status":"Pulling"}` + "\n" + `{"status":"Done"}` + "\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{issue(2, x509.ExtKeyUsageServerAuth)}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	f.url = "tcp://" + srv.Listener.Addr().String()
	return f
}

// A tcp:// engine: TLS with the certificate folder (refused without it), the API version negotiated with the
// engine, and a pull that carries the registry's credentials from a docker config.json and the :latest tag.
func TestEngine_TLSVersionAndRegistryAuth(t *testing.T) {
	for _, k := range []string{"DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_API_VERSION", "DOCKER_CONFIG"} {
		t.Setenv(k, "")
	}
	f := newFakeEngine(t)
	if New(Options{Host: f.url}).Available(t.Context()) {
		t.Error("the engine answered without a client certificate")
	}
	config := filepath.Join(t.TempDir(), "config.json")
	auths := `{"auths": {"registry.example:5000": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("robot:s3cret")) + `"},
		"https://index.docker.io/v1/": {"username": "hub", "password": "hubpass"}}}`
	if err := os.WriteFile(config, []byte(auths), 0o600); err != nil {
		t.Fatal(err)
	}
	r := New(Options{Host: f.url, CertPath: f.certDir, RegistryConfig: config})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.Available(t.Context()) {
		t.Fatal("the engine does not answer over TLS with the certificate folder")
	}
	for _, img := range []string{"registry.example:5000/team/analyzer", "thehiveproject/yara:3", "other.example/x:1"} {
		if err := r.engine.pull(t.Context(), img); err != nil {
			t.Fatalf("pull %s: %v", img, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pulls) != 3 {
		t.Fatalf("%d pulls", len(f.pulls))
	}
	for i, want := range []struct{ path, image, tag, user, password string }{
		{"/v1.41/images/create", "registry.example:5000/team/analyzer", "latest", "robot", "s3cret"},
		{"/v1.41/images/create", "docker.io/thehiveproject/yara", "3", "hub", "hubpass"},
		{"/v1.41/images/create", "other.example/x", "1", "", ""},
	} {
		p := f.pulls[i]
		if p.URL.Path != want.path || p.URL.Query().Get("fromImage") != want.image || p.URL.Query().Get("tag") != want.tag {
			t.Errorf("pull %d: %s ?%s", i, p.URL.Path, p.URL.RawQuery)
		}
		var got struct{ Username, Password string }
		if h := p.Header.Get("X-Registry-Auth"); h != "" {
			b, err := base64.URLEncoding.DecodeString(h)
			if err != nil {
				t.Fatalf("pull %d: X-Registry-Auth %q: %v", i, h, err)
			}
			_ = json.Unmarshal(b, &got)
		}
		if got.Username != want.user || got.Password != want.password {
			t.Errorf("pull %d: credentials %q/%q, want %q/%q", i, got.Username, got.Password, want.user, want.password)
		}
	}
}

func TestReadAuths_MissingDefaultIsNone(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	if a, err := readAuths(""); err != nil || len(a) != 0 {
		t.Errorf("readAuths = %v, %v", a, err)
	}
	if _, err := readAuths(filepath.Join(t.TempDir(), "absent.json")); err == nil {
		t.Error("an explicit absent file is not an error")
	}
}
