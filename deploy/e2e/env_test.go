//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
)

// labelKey marks every container, network and volume of the suite (the value is the run's id).
const labelKey = "io.openir.e2e"

// staleAfter: a resource of the suite older than this was left by a run that was killed (go test's timeout
// or an interrupt skip t.Cleanup); the next run removes it. Longer than the longest run (-timeout 15m).
const staleAfter = time.Hour

var (
	analysisImage = envOr("E2E_ANALYSIS_IMAGE", "openir/analysis-svc:dev")
	caseImage     = envOr("E2E_CASE_IMAGE", "openir/case-svc:dev")
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	// The reaper (Ryuk) is an image from a registry, and this suite never pulls: every test removes what it
	// made itself (t.Cleanup). The Makefile exports the same setting.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	// testcontainers reaches mapped ports at the default gateway when it runs inside a container (/.dockerenv),
	// as on these CI machines; but there the engine runs in the same network namespace (its bridge docker0 is a
	// local interface), so the ports are on loopback. TESTCONTAINERS_HOST_OVERRIDE, when set, wins.
	if _, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !set && localEngine() {
		_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	}
	if os.Getenv("E2E_TESTCONTAINERS_LOG") == "" { // testcontainers' own progress lines; our t.Log says enough
		tclog.SetDefault(tclog.NewNoopLogger())
	}
	os.Exit(m.Run())
}

// localEngine reports whether the Docker engine is reached by a local socket and runs in this network
// namespace (its default bridge docker0 is one of our interfaces).
func localEngine() bool {
	if h := os.Getenv("DOCKER_HOST"); h != "" && !strings.HasPrefix(h, "unix://") {
		return false
	}
	_, err := net.InterfaceByName("docker0")
	return err == nil
}

// stack is one test's world: its network and named volumes, and the Docker client.
type stack struct {
	t       *testing.T
	ctx     context.Context
	start   time.Time
	id      string // run id: in names and labels
	docker  *testcontainers.DockerClient
	net     *testcontainers.DockerNetwork
	mu      sync.Mutex
	volumes []string
}

var sweepOnce sync.Once

// newStack checks the images, removes stale leftovers of killed runs, and creates the test's network. Every
// resource is removed by t.Cleanup, also when the test fails.
func newStack(t *testing.T) *stack {
	t.Helper()
	// Docker calls end before go test's -timeout would kill the process (a timeout skips every cleanup).
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-30*time.Second))
	}
	t.Cleanup(cancel)
	s := &stack{t: t, ctx: ctx, start: time.Now(), id: "e2e-" + randomHex(4)}
	docker, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatalf("docker: %v (the container suite needs a running Docker engine)", err)
	}
	t.Cleanup(func() { _ = docker.Close() })
	s.docker = docker
	for _, img := range []string{analysisImage, caseImage} {
		if _, err := docker.ImageInspect(ctx, img); err != nil {
			t.Fatalf("image %s is not available locally (%v): run `make images` first (this suite never pulls an image)", img, err)
		}
	}
	sweepOnce.Do(func() { s.sweepStale() })
	nw, err := network.New(ctx, network.WithLabels(map[string]string{labelKey: s.id}))
	testcontainers.CleanupNetwork(t, nw) // registered first: runs after every container is gone
	if err != nil {
		t.Fatalf("create the test network: %v", err)
	}
	s.net = nw
	// Volumes go after the containers that use them (cleanups run last-in first-out).
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, v := range s.volumes {
			if _, err := docker.VolumeRemove(cctx, v, client.VolumeRemoveOptions{Force: true}); err != nil {
				t.Errorf("remove volume %s: %v", v, err)
			}
		}
	})
	s.logf("network %s (run %s)", nw.Name, s.id)
	return s
}

// sweepStale removes containers, networks and volumes of the suite that a killed run left behind.
func (s *stack) sweepStale() {
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	f := make(client.Filters).Add("label", labelKey)
	old := time.Now().Add(-staleAfter)
	if cs, err := s.docker.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
		for _, c := range cs.Items {
			if time.Unix(c.Created, 0).Before(old) {
				_, err := s.docker.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
				s.logf("removed stale container %s: %v", c.ID[:12], err)
			}
		}
	}
	if ns, err := s.docker.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
		for _, n := range ns.Items {
			if n.Created.Before(old) {
				_, err := s.docker.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
				s.logf("removed stale network %s: %v", n.Name, err)
			}
		}
	}
	if vs, err := s.docker.VolumeList(ctx, client.VolumeListOptions{Filters: f}); err == nil {
		for _, v := range vs.Items {
			if at, err := time.Parse(time.RFC3339, v.CreatedAt); err == nil && at.Before(old) {
				_, err := s.docker.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
				s.logf("removed stale volume %s: %v", v.Name, err)
			}
		}
	}
}

// logf is the progress log: seconds since the test started, then the message.
func (s *stack) logf(format string, args ...any) {
	s.t.Helper()
	s.t.Logf("[%6.1fs] %s", time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
}

// volume creates a named volume (removed when the test ends) and returns its name.
func (s *stack) volume(t testing.TB, name string) string {
	t.Helper()
	full := s.id + "-" + name
	if _, err := s.docker.VolumeCreate(s.ctx, client.VolumeCreateOptions{Name: full, Labels: map[string]string{labelKey: s.id}}); err != nil {
		t.Fatalf("create volume %s: %v", full, err)
	}
	s.mu.Lock()
	s.volumes = append(s.volumes, full)
	s.mu.Unlock()
	return full
}

// node is one service container. Its URL (the mapped port on the host) is read again after every start.
type node struct {
	s       *stack
	name    string // container name suffix and log label
	alias   string // its name on the test network
	image   string
	port    string // "9001/tcp"
	env     map[string]string
	volume  string // named volume on /data ("" = the image's anonymous volume)
	files   []testcontainers.ContainerFile
	build   *testcontainers.FromDockerfile // the image is built from this when the container is made (image "")
	prepare func() error                   // run once before the first container is made (builds its files)
	c       *testcontainers.DockerContainer
	url     string
	gen     int // how many containers were made for this node (replace makes a new one)
}

// readyTimeout bounds every wait for /readyz.
const readyTimeout = 90 * time.Second

func (n *node) options() []testcontainers.ContainerCustomizer {
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithName(fmt.Sprintf("%s-%s-%d", n.s.id, n.name, n.gen)),
		testcontainers.WithLabels(map[string]string{labelKey: n.s.id}),
		testcontainers.WithEnv(n.env),
		testcontainers.WithExposedPorts(n.port),
		network.WithNetwork([]string{n.alias}, n.s.net),
		testcontainers.WithWaitStrategyAndDeadline(readyTimeout,
			wait.ForHTTP("/readyz").WithPort(n.port).WithStartupTimeout(readyTimeout).WithPollInterval(200*time.Millisecond)),
	}
	if n.volume != "" {
		opts = append(opts, testcontainers.WithMounts(testcontainers.VolumeMount(n.volume, "/data")))
	}
	if len(n.files) > 0 {
		opts = append(opts, testcontainers.WithFiles(n.files...))
	}
	if n.build != nil {
		opts = append(opts, testcontainers.WithDockerfile(*n.build))
	}
	return opts
}

// create makes and starts the container; the caller registers its cleanup (see startNodes). Safe to call
// from a goroutine: it reports errors instead of failing the test.
func (n *node) create() error {
	if n.prepare != nil && n.gen == 0 {
		if err := n.prepare(); err != nil {
			return fmt.Errorf("prepare %s: %w", n.name, err)
		}
	}
	n.gen++
	c, err := testcontainers.Run(n.s.ctx, n.image, n.options()...)
	n.c = c
	if err != nil {
		return fmt.Errorf("start %s (%s): %w", n.name, n.image, err)
	}
	return n.refreshURL()
}

func (n *node) refreshURL() error {
	u, err := n.c.PortEndpoint(n.s.ctx, n.port, "http")
	if err != nil {
		return fmt.Errorf("%s: mapped port of %s: %w", n.name, n.port, err)
	}
	n.url = u
	return nil
}

// track registers the container's removal, and on failure the tail of its logs, with the test's t.Cleanup
// (the test that made the stack: a container started in a subtest outlives it).
func (n *node) track() {
	t, c := n.s.t, n.c
	if c == nil {
		return
	}
	testcontainers.CleanupContainer(t, c, testcontainers.StopTimeout(5*time.Second))
	name := fmt.Sprintf("%s (container %d of the node)", n.name, n.gen)
	t.Cleanup(func() { // runs before the removal above
		if t.Failed() {
			n.s.dumpLogs(name, c)
		}
	})
}

// dumpLogs prints the last lines of a container's output.
func (s *stack) dumpLogs(name string, c *testcontainers.DockerContainer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := c.Logs(ctx)
	if err != nil {
		s.t.Logf("logs of %s: %v", name, err)
		return
	}
	defer rc.Close()
	var lines []string
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	s.t.Logf("---- last %d log lines of %s ----\n%s", len(lines), name, strings.Join(lines, "\n"))
}

// startNodes starts containers in parallel and registers their cleanup before failing on any error.
func (s *stack) startNodes(t testing.TB, nodes ...*node) {
	t.Helper()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.create()
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		n.track()
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		s.logf("%s ready: %s (alias %s, container %s)", n.name, n.url, n.alias, n.c.GetContainerID()[:12])
	}
}

// stop stops the container (SIGTERM, then SIGKILL after grace) and returns how long it took.
func (n *node) stop(t testing.TB, grace time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	if err := n.c.Stop(n.s.ctx, &grace); err != nil {
		t.Fatalf("stop %s: %v", n.name, err)
	}
	took := time.Since(began)
	st, err := n.c.State(n.s.ctx)
	if err != nil {
		t.Fatalf("state of %s: %v", n.name, err)
	}
	n.s.logf("%s stopped in %s (exit code %d)", n.name, took.Round(100*time.Millisecond), st.ExitCode)
	return took
}

// restart starts the same (stopped) container again: same volume, same network alias; the mapped port
// may have changed, so the URL is read again.
func (n *node) restart(t testing.TB) {
	t.Helper()
	if err := n.c.Start(n.s.ctx); err != nil { // runs the /readyz wait again
		t.Fatalf("start %s again: %v", n.name, err)
	}
	if err := n.refreshURL(); err != nil {
		t.Fatal(err)
	}
	n.s.logf("%s started again: %s", n.name, n.url)
}

// replace removes the container (its named volume stays) and creates a new one with the same settings.
func (n *node) replace(t testing.TB, grace time.Duration) {
	t.Helper()
	if n.volume == "" {
		t.Fatalf("replace %s: it has no named volume, its data would be lost", n.name)
	}
	old := n.c
	began := time.Now()
	if err := old.Terminate(n.s.ctx, testcontainers.StopTimeout(grace)); err != nil {
		t.Fatalf("remove %s: %v", n.name, err)
	}
	n.s.logf("%s container %s removed in %s; volume %s kept", n.name, old.GetContainerID()[:12],
		time.Since(began).Round(100*time.Millisecond), n.volume)
	err := n.create()
	n.track()
	if err != nil {
		t.Fatal(err)
	}
	n.s.logf("%s ready on the same volume: %s (container %s)", n.name, n.url, n.c.GetContainerID()[:12])
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// slowAnalyzerFiles builds testdata/slowanalyzer (static, for the FROM scratch image) and returns the files
// that make it an analyzers root at /analyzers: Slow/Slow.json and the program Slow/slow.
func slowAnalyzerFiles(t *testing.T) []testcontainers.ContainerFile {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "slow")
	gobin := os.Getenv("GO")
	if gobin == "" {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", bin, "./testdata/slowanalyzer")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the slow analyzer: %v\n%s", err, out)
	}
	def, err := filepath.Abs("testdata/analyzers/Slow/Slow.json")
	if err != nil {
		t.Fatal(err)
	}
	return []testcontainers.ContainerFile{
		{HostFilePath: def, ContainerFilePath: "/analyzers/Slow/Slow.json", FileMode: 0o644},
		{HostFilePath: bin, ContainerFilePath: "/analyzers/Slow/slow", FileMode: 0o755},
	}
}

// mustJSON encodes v (test data only).
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
