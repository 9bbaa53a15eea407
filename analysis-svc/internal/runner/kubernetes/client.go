package kubernetes

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// ClientConfig says how to reach an API server: in-cluster (InClusterConfig) or from a kubeconfig file
// (LoadKubeconfig). Only bearer tokens and client certificates are supported (no exec or auth-provider
// plugins).
type ClientConfig struct {
	Server    string // https://host:port
	CAData    []byte // PEM; nil = the system roots
	Insecure  bool   // skip the server certificate check (kubeconfig insecure-skip-tls-verify)
	Token     string
	TokenFile string // re-read every minute: bound service-account tokens rotate
	CertData  []byte // client certificate and key, PEM
	KeyData   []byte
	Namespace string // the kubeconfig context's or the service account's namespace
}

// In-cluster files of the service account.
const (
	saDir       = "/var/run/secrets/kubernetes.io/serviceaccount"
	tokenPeriod = time.Minute
)

// InClusterConfig is the configuration of a pod: KUBERNETES_SERVICE_HOST/_PORT and the mounted service-account
// token, CA and namespace.
func InClusterConfig() (ClientConfig, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return ClientConfig{}, errors.New("not in a Kubernetes pod (KUBERNETES_SERVICE_HOST and _PORT are not set); set job.kubernetes.kubeconfig")
	}
	ca, err := os.ReadFile(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return ClientConfig{}, fmt.Errorf("in-cluster CA: %w (is automountServiceAccountToken off?)", err)
	}
	cfg := ClientConfig{Server: "https://" + net.JoinHostPort(host, port), CAData: ca, TokenFile: filepath.Join(saDir, "token")}
	if ns, err := os.ReadFile(filepath.Join(saDir, "namespace")); err == nil {
		cfg.Namespace = strings.TrimSpace(string(ns))
	}
	return cfg, nil
}

type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Token                 string `yaml:"token"`
			TokenFile             string `yaml:"tokenFile"`
			ClientCertificate     string `yaml:"client-certificate"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKey             string `yaml:"client-key"`
			ClientKeyData         string `yaml:"client-key-data"`
			Exec                  any    `yaml:"exec"`
			AuthProvider          any    `yaml:"auth-provider"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster   string `yaml:"cluster"`
			User      string `yaml:"user"`
			Namespace string `yaml:"namespace"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// LoadKubeconfig reads a kubeconfig file and returns the configuration of context name ("" = its
// current-context). Relative file paths are relative to the file's folder, as kubectl reads them.
func LoadKubeconfig(path, name string) (ClientConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ClientConfig{}, fmt.Errorf("kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		return ClientConfig{}, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if name == "" {
		name = kc.CurrentContext
	}
	base := filepath.Dir(path)
	file := func(p string) ([]byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		return os.ReadFile(p)
	}
	inline := func(data, p string) ([]byte, error) {
		if data != "" {
			return base64.StdEncoding.DecodeString(data)
		}
		if p != "" {
			return file(p)
		}
		return nil, nil
	}
	for _, c := range kc.Contexts {
		if c.Name != name {
			continue
		}
		cfg := ClientConfig{Namespace: c.Context.Namespace}
		found := false
		for _, cl := range kc.Clusters {
			if cl.Name == c.Context.Cluster {
				found = true
				cfg.Server, cfg.Insecure = cl.Cluster.Server, cl.Cluster.InsecureSkipTLSVerify
				if cfg.CAData, err = inline(cl.Cluster.CertificateAuthorityData, cl.Cluster.CertificateAuthority); err != nil {
					return ClientConfig{}, fmt.Errorf("kubeconfig %s: cluster %s: %w", path, cl.Name, err)
				}
			}
		}
		if !found {
			return ClientConfig{}, fmt.Errorf("kubeconfig %s: context %s names no known cluster", path, name)
		}
		for _, u := range kc.Users {
			if u.Name != c.Context.User {
				continue
			}
			if u.User.Exec != nil || u.User.AuthProvider != nil {
				return ClientConfig{}, fmt.Errorf("kubeconfig %s: user %s: exec and auth-provider plugins are not supported (use a token or a client certificate)", path, u.Name)
			}
			cfg.Token = u.User.Token
			if u.User.TokenFile != "" {
				cfg.TokenFile = u.User.TokenFile
				if !filepath.IsAbs(cfg.TokenFile) {
					cfg.TokenFile = filepath.Join(base, cfg.TokenFile)
				}
			}
			if cfg.CertData, err = inline(u.User.ClientCertificateData, u.User.ClientCertificate); err != nil {
				return ClientConfig{}, fmt.Errorf("kubeconfig %s: user %s: %w", path, u.Name, err)
			}
			if cfg.KeyData, err = inline(u.User.ClientKeyData, u.User.ClientKey); err != nil {
				return ClientConfig{}, fmt.Errorf("kubeconfig %s: user %s: %w", path, u.Name, err)
			}
		}
		return cfg, nil
	}
	return ClientConfig{}, fmt.Errorf("kubeconfig %s: no context %q", path, name)
}

// Client is a small client of the Kubernetes REST API: the calls the runner makes, JSON over HTTPS. It is
// safe for concurrent use.
type Client struct {
	cfg  ClientConfig
	http *http.Client

	mu        sync.Mutex
	token     string
	tokenRead time.Time
}

// NewClient returns a client of cfg.Server. It does not contact the server.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("kubernetes: invalid API server address %q", cfg.Server)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // only when the kubeconfig says so
	if len(cfg.CAData) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CAData) {
			return nil, errors.New("kubernetes: the CA data holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if len(cfg.CertData) > 0 {
		cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
		if err != nil {
			return nil, fmt.Errorf("kubernetes: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.Proxy = nil // the API server is reached directly, as client-go does for in-cluster
	return &Client{cfg: cfg, http: &http.Client{Transport: tr}}, nil
}

// Namespace is the namespace of the configuration (kubeconfig context or service account).
func (c *Client) Namespace() string { return c.cfg.Namespace }

// bearer is the token to send: the configured one, or TokenFile's content, re-read every minute.
func (c *Client) bearer() (string, error) {
	if c.cfg.TokenFile == "" {
		return c.cfg.Token, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && time.Since(c.tokenRead) < tokenPeriod {
		return c.token, nil
	}
	b, err := os.ReadFile(c.cfg.TokenFile)
	if err != nil {
		if c.token != "" { // keep the last token while the file is being replaced
			return c.token, nil
		}
		return "", fmt.Errorf("kubernetes: read the token: %w", err)
	}
	c.token, c.tokenRead = strings.TrimSpace(string(b)), time.Now()
	return c.token, nil
}

// APIError is a refusal of the API server, from its Status body.
type APIError struct {
	Code    int
	Reason  string // AlreadyExists, NotFound, Forbidden, Invalid, Conflict…
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("kubernetes API: %d %s: %s", e.Code, e.Reason, e.Message)
}

// IsAlreadyExists reports an AlreadyExists refusal.
func IsAlreadyExists(err error) bool { return reason(err) == "AlreadyExists" }

// IsNotFound reports a NotFound refusal.
func IsNotFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == http.StatusNotFound
}

// IsQuotaExceeded reports a refusal by a ResourceQuota (403 "exceeded quota"): a wait, not a failure.
func IsQuotaExceeded(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == http.StatusForbidden && strings.Contains(e.Message, "exceeded quota")
}

func reason(err error) string {
	var e *APIError
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// do sends one request; body (if not nil) is sent as JSON; a 2xx answer is decoded into out (if not nil),
// another one is an *APIError.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := c.send(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("kubernetes API: %s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// send sends one request and returns a 2xx response (the caller closes its body) or an error.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := strings.TrimSuffix(c.cfg.Server, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "analysis-svc")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	tok, err := c.bearer()
	if err != nil {
		return nil, err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("kubernetes API: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &st) != nil || st.Message == "" {
		st.Message = strings.TrimSpace(string(raw))
	}
	if st.Reason == "" {
		st.Reason = http.StatusText(resp.StatusCode)
	}
	return nil, &APIError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
}

func jobsPath(ns string) string { return "/apis/batch/v1/namespaces/" + url.PathEscape(ns) + "/jobs" }
func podsPath(ns string) string { return "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods" }

// Version is the API server's version (GET /version): a check that it answers and accepts the credentials.
func (c *Client) Version(ctx context.Context) (string, error) {
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := c.do(ctx, http.MethodGet, "/version", nil, nil, &v); err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// CreateJob creates job in ns; dryRun asks the server to check it without storing it.
func (c *Client) CreateJob(ctx context.Context, ns string, job *Job, dryRun bool) (*Job, error) {
	var q url.Values
	if dryRun {
		q = url.Values{"dryRun": {"All"}}
	}
	job.APIVersion, job.Kind = "batch/v1", "Job"
	var out Job
	if err := c.do(ctx, http.MethodPost, jobsPath(ns), q, job, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetJob reads the Job name of ns.
func (c *Client) GetJob(ctx context.Context, ns, name string) (*Job, error) {
	var out Job
	if err := c.do(ctx, http.MethodGet, jobsPath(ns)+"/"+url.PathEscape(name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteJob deletes the Job name of ns and, through the garbage collector, its pods (propagationPolicy
// Background: batch/v1's default would orphan them). A Job already gone is not an error.
func (c *Client) DeleteJob(ctx context.Context, ns, name string) error {
	err := c.do(ctx, http.MethodDelete, jobsPath(ns)+"/"+url.PathEscape(name),
		url.Values{"propagationPolicy": {"Background"}}, nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// ListJobs lists the Jobs of ns that match the label selector.
func (c *Client) ListJobs(ctx context.Context, ns, selector string) ([]Job, error) {
	var out struct {
		Items []Job `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, jobsPath(ns), url.Values{"labelSelector": {selector}}, nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// ListPods lists the pods of ns that match the label selector.
func (c *Client) ListPods(ctx context.Context, ns, selector string) ([]Pod, error) {
	var out struct {
		Items []Pod `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, podsPath(ns), url.Values{"labelSelector": {selector}}, nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// PodLog writes the last tailLines lines (at most limitBytes bytes) of a container's log to w.
func (c *Client) PodLog(ctx context.Context, ns, pod, container string, tailLines, limitBytes int, w io.Writer) error {
	q := url.Values{"container": {container}}
	if tailLines > 0 {
		q.Set("tailLines", strconv.Itoa(tailLines))
	}
	if limitBytes > 0 {
		q.Set("limitBytes", strconv.Itoa(limitBytes))
	}
	resp, err := c.send(ctx, http.MethodGet, podsPath(ns)+"/"+url.PathEscape(pod)+"/log", q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}
