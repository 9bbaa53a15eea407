// Package k8stest starts a real Kubernetes control plane for tests: etcd (Debian's etcd-server), the
// kube-apiserver and kube-controller-manager of deploy/k8stools (built into a cache folder outside git when
// missing: about 12 minutes of CPU the first time) and the fakelet, a kubelet stand-in that runs pods with the
// local Docker engine. It is for tests only.
package k8stest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// Cluster is a running control plane with one fakelet node.
type Cluster struct {
	Server     string // https://127.0.0.1:port
	AdminToken string // system:masters
	Namespace  string // where the fakelet runs pods (PSA baseline enforced, restricted warned)
	// RunnerToken authenticates as system:serviceaccount:<Namespace>:analysis-svc, which has only the
	// Role of deploy/k8s/kubernetes-runner (jobs, pods, pods/log, events in Namespace).
	RunnerToken string
	Dir         string // the cluster's files; Kubeconfig(token) writes there
	procs       []*proc
	logs        map[string]*lockedBuffer
	instance    string
}

// ServiceAccount is the name of the runner's account in Namespace.
const ServiceAccount = "analysis-svc"

// RepoRoot is the repository's root folder (the parent of the folder holding go.work).
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("no caller information")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above " + file)
		}
		dir = parent
	}
}

// Missing says why the control plane cannot be started here ("" when it can): no etcd, no Docker engine.
func Missing() string {
	if _, err := exec.LookPath("etcd"); err != nil {
		return "etcd is not installed (apt-get install etcd-server; .ci/run installs it)"
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		return "no Docker engine answers: " + strings.TrimSpace(string(out))
	}
	return ""
}

// Binaries builds (when missing) and returns the folder of kube-apiserver, kube-controller-manager and
// fakelet (deploy/k8stools/build.sh).
func Binaries(log io.Writer) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(root, "deploy", "k8stools", "build.sh"))
	cmd.Stderr = log
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("deploy/k8stools/build.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// Start starts etcd, the API server, the controller manager (job, garbage collector, TTL, service account
// and resource quota controllers: the quota's usage is counted, so the API server enforces ResourceQuotas) and the fakelet in dir, creates Namespace with the runner's account and Role, and
// waits until they are ready. Stop stops them.
func Start(ctx context.Context, bin, dir, namespace string) (c *Cluster, err error) {
	c = &Cluster{Dir: dir, Namespace: namespace, logs: map[string]*lockedBuffer{},
		AdminToken: rand.Text(), RunnerToken: rand.Text(), instance: "fk" + strings.ToLower(rand.Text()[:8])}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.Logs())
			c.Stop()
		}
	}()
	ports, err := freePorts(4)
	if err != nil {
		return c, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	if err := c.spawn("etcd", "etcd", "--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--log-level=warn"); err != nil {
		return c, err
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, err
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err := writeFile(dir, "sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})); err != nil {
		return c, err
	}
	if err := writeFile(dir, "sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})); err != nil {
		return c, err
	}
	sa := "system:serviceaccount:" + namespace + ":" + ServiceAccount
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,%s,runner,\"system:serviceaccounts,system:serviceaccounts:%s\"\n",
		c.AdminToken, c.RunnerToken, sa, namespace)
	if err := writeFile(dir, "tokens.csv", []byte(tokens)); err != nil {
		return c, err
	}
	c.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := c.spawn("kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers="+etcdURL, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "certs"), "--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"), "--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--kubelet-preferred-address-types=InternalIP"); err != nil {
		return c, err
	}
	if err := c.waitReady(ctx, 2*time.Minute); err != nil {
		return c, err
	}
	admin, err := c.Kubeconfig("admin", c.AdminToken, "")
	if err != nil {
		return c, err
	}
	if err := c.spawn("kube-controller-manager", filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+admin, "--authentication-kubeconfig="+admin, "--authorization-kubeconfig="+admin,
		"--controllers=job-controller,garbage-collector-controller,ttl-after-finished-controller,serviceaccount-controller,resourcequota-controller",
		"--leader-elect=false", "--secure-port=0", "--concurrent-job-syncs=5"); err != nil {
		return c, err
	}
	if err := c.setup(ctx); err != nil {
		return c, err
	}
	if err := c.spawn("fakelet", filepath.Join(bin, "fakelet"), "--kubeconfig="+admin, "--namespace="+namespace,
		"--port="+strconv.Itoa(ports[3]), "--workdir="+filepath.Join(dir, "pods"), "--instance="+c.instance); err != nil {
		return c, err
	}
	// Ready when the node is registered and the namespace's default service account exists (pods need it).
	deadline := time.Now().Add(time.Minute)
	for {
		nodeErr := c.Do(ctx, c.AdminToken, http.MethodGet, "/api/v1/nodes/fakelet", nil, nil)
		saErr := c.Do(ctx, c.AdminToken, http.MethodGet, "/api/v1/namespaces/"+namespace+"/serviceaccounts/default", nil, nil)
		if nodeErr == nil && saErr == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("the fakelet node or the default service account did not appear: %v; %v", nodeErr, saErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// setup creates the objects of deploy/k8s/kubernetes-runner (the jobs namespace with its Pod Security labels,
// the service accounts, the runner's Role and RoleBinding, the LimitRange and ResourceQuota, the network
// policies), with both namespaces it names (openir-analysis-jobs and openir) renamed to Namespace: the API
// server validates the manifests as they are shipped, and the tests run as the account they give rights to.
func (c *Cluster) setup(ctx context.Context) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "deploy", "k8s", "kubernetes-runner")
	for _, file := range []string{"namespace.yaml", "rbac.yaml", "limits.yaml", "networkpolicy.yaml", "networkpolicy-openir.yaml"} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if obj == nil {
				continue
			}
			obj = renameNamespaces(obj, c.Namespace).(map[string]any)
			path, err := collectionPath(obj, c.Namespace)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if err := c.Do(ctx, c.AdminToken, http.MethodPost, path, obj, nil); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	return nil
}

// renameNamespaces replaces the namespace names of deploy/k8s/kubernetes-runner with ns, wherever they appear.
func renameNamespaces(v any, ns string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = renameNamespaces(e, ns)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = renameNamespaces(e, ns)
		}
		return x
	case string:
		if x == "openir" || x == "openir-analysis-jobs" {
			return ns
		}
	}
	return v
}

// collectionPath is where an object of deploy/k8s/kubernetes-runner is created.
func collectionPath(obj map[string]any, ns string) (string, error) {
	kind, _ := obj["kind"].(string)
	base := "/api/v1/namespaces/" + ns + "/"
	switch kind {
	case "Namespace":
		return "/api/v1/namespaces", nil
	case "ServiceAccount":
		return base + "serviceaccounts", nil
	case "LimitRange":
		return base + "limitranges", nil
	case "ResourceQuota":
		return base + "resourcequotas", nil
	case "Role":
		return "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/roles", nil
	case "RoleBinding":
		return "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings", nil
	case "NetworkPolicy":
		return "/apis/networking.k8s.io/v1/namespaces/" + ns + "/networkpolicies", nil
	}
	return "", fmt.Errorf("no path known for a %s", kind)
}

// Kubeconfig writes a kubeconfig for token (namespace ns) and returns its path.
func (c *Cluster) Kubeconfig(name, token, ns string) (string, error) {
	ca, err := os.ReadFile(filepath.Join(c.Dir, "certs", "apiserver.crt"))
	if err != nil {
		return "", err
	}
	caPath := filepath.Join(c.Dir, "ca-"+name+".crt")
	if err := os.WriteFile(caPath, ca, 0o600); err != nil {
		return "", err
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: test
  context:
    cluster: test
    user: %s
    namespace: %s
`, c.Server, filepath.Base(caPath), name, token, name, ns)
	path := filepath.Join(c.Dir, name+".kubeconfig")
	return path, os.WriteFile(path, []byte(kc), 0o600)
}

// Do sends a JSON request to the API server as token; out (if not nil) receives the JSON answer.
func (c *Cluster) Do(ctx context.Context, token, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Server+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test API server's own certificate
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// waitReady waits for the API server's /readyz.
func (c *Cluster) waitReady(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		if last = c.Do(ctx, c.AdminToken, http.MethodGet, "/readyz", nil, nil); last == nil {
			return nil
		}
		if err := c.exited(); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready within %s: %v", within, last)
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when it exited
	err  error         // set before done is closed
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (c *Cluster) exited() error {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v", p.name, p.err)
		default:
		}
	}
	return nil
}

func (c *Cluster) spawn(name, path string, args ...string) error {
	buf := &lockedBuffer{}
	c.logs[name] = buf
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = buf, buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	c.procs = append(c.procs, p)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return nil
}

// Logs is the tail of each process's output (for a failure message).
func (c *Cluster) Logs() string {
	var b strings.Builder
	for name, buf := range c.logs {
		s := buf.String()
		if len(s) > 4000 {
			s = "…" + s[len(s)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", name, s)
	}
	return b.String()
}

// Stop stops the processes, last started first (the fakelet removes its containers on SIGTERM).
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	// Containers of a fakelet that was killed.
	if out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=fakelet="+c.instance).Output(); err == nil {
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	}
}

func writeFile(dir, name string, data []byte) error {
	return os.WriteFile(filepath.Join(dir, name), data, 0o600)
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
