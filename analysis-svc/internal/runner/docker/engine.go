package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
)

// engine is the Docker Engine as the runner uses it, through the official Go client (github.com/moby/moby/client):
// it negotiates the API version with the engine, speaks TLS to tcp:// hosts with the DOCKER_CERT_PATH (or
// Options.CertPath) certificates, and sends registry credentials on pulls.
type engine struct {
	cli   *client.Client
	auths map[string]registry.AuthConfig // registry host -> credentials (docker's config.json "auths")
}

// errNoImage is the engine's answer to a container create whose image is not present.
var errNoImage = errors.New("no such image")

// newEngine makes the client: the standard DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH and
// DOCKER_API_VERSION variables first, then the options (a host and a certificate folder win over them).
func newEngine(opts Options) (*engine, error) {
	ops := []client.Opt{client.FromEnv}
	if opts.Host != "" {
		if !strings.Contains(opts.Host, "://") && strings.HasPrefix(opts.Host, "/") {
			opts.Host = "unix://" + opts.Host
		}
		ops = append(ops, client.WithHost(opts.Host))
	}
	if opts.CertPath != "" {
		ops = append(ops, client.WithTLSClientConfig(filepath.Join(opts.CertPath, "ca.pem"),
			filepath.Join(opts.CertPath, "cert.pem"), filepath.Join(opts.CertPath, "key.pem")))
	}
	cli, err := client.New(ops...)
	if err != nil {
		return nil, fmt.Errorf("docker host: %w", err)
	}
	auths, err := readAuths(opts.RegistryConfig)
	if err != nil {
		return nil, err
	}
	return &engine{cli: cli, auths: auths}, nil
}

// readAuths reads the registry credentials of a docker config.json ("" = $DOCKER_CONFIG/config.json, else
// ~/.docker/config.json, each only if it exists). Only inline credentials ("auth", or "username" and
// "password", or "identitytoken") are used: credential helpers are programs this service does not run.
func readAuths(path string) (map[string]registry.AuthConfig, error) {
	explicit := path != ""
	if !explicit {
		if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
			path = filepath.Join(dir, "config.json")
		} else if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, ".docker", "config.json")
		}
	}
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docker registry credentials: %w", err)
	}
	var conf struct {
		Auths map[string]registry.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		return nil, fmt.Errorf("docker registry credentials %s: %w", path, err)
	}
	out := map[string]registry.AuthConfig{}
	for host, a := range conf.Auths {
		if a.Auth != "" && a.Username == "" {
			if raw, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
				a.Username, a.Password, _ = strings.Cut(string(raw), ":")
			}
		}
		a.Auth, a.ServerAddress = "", host
		out[registryHost(host)] = a
	}
	return out, nil
}

// registryHost is the host of a config.json key ("https://index.docker.io/v1/" → "docker.io").
func registryHost(key string) string {
	h := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	h, _, _ = strings.Cut(h, "/")
	switch h {
	case "index.docker.io", "registry-1.docker.io":
		return "docker.io"
	}
	return h
}

func (e *engine) ping(ctx context.Context) error {
	_, err := e.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err
}

func (e *engine) create(ctx context.Context, conf *container.Config, host *container.HostConfig) (string, error) {
	res, err := e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: conf, HostConfig: host})
	if cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("%w: %w", errNoImage, err)
	}
	if err != nil {
		return "", err
	}
	return res.ID, nil
}

func (e *engine) start(ctx context.Context, id string) error {
	_, err := e.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return err
}

// wait blocks until the container is not running.
func (e *engine) wait(ctx context.Context, id string) error {
	w := e.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case r := <-w.Result:
		if r.Error != nil && r.Error.Message != "" {
			return fmt.Errorf("docker engine: %s", r.Error.Message)
		}
		return nil
	case err := <-w.Error:
		return err
	}
}

func (e *engine) kill(ctx context.Context, id string) error {
	_, err := e.cli.ContainerKill(ctx, id, client.ContainerKillOptions{})
	if cerrdefs.IsConflict(err) { // not running any more
		return nil
	}
	return err
}

func (e *engine) remove(ctx context.Context, id string) error {
	_, err := e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// logs copies the last lines of the container's stdout and stderr, interleaved, to w.
func (e *engine) logs(ctx context.Context, id string, lines int, w io.Writer) error {
	rc, err := e.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true,
		Tail: strconv.Itoa(lines)})
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = stdcopy.StdCopy(w, w, rc) // containers run without a TTY: the stream is multiplexed
	return err
}

// pull fetches image from its registry (":latest" when it names no tag or digest, as `docker run` does),
// with the credentials configured for that registry, reading the progress stream to its end.
func (e *engine) pull(ctx context.Context, image string) error {
	opts := client.ImagePullOptions{}
	if ref, err := reference.ParseNormalizedNamed(image); err == nil {
		if a, ok := e.auths[reference.Domain(ref)]; ok {
			enc, err := authconfig.Encode(a)
			if err != nil {
				return err
			}
			opts.RegistryAuth = enc
		}
	}
	resp, err := e.cli.ImagePull(ctx, image, opts)
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Wait(ctx)
}
