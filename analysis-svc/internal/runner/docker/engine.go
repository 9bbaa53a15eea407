package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// engine is the handful of Docker Engine API calls the runner needs, over the engine's socket. Paths are
// unversioned: the engine answers with its own API version, and these calls have been stable since API 1.25
// (Docker 1.13), while a pinned old version is refused by recent engines (Docker 29 needs ≥ 1.44).
type engine struct {
	http *http.Client
	base string // scheme://host for URLs
	host string // as configured, for messages
}

// errNoImage is the engine's 404 on container create: the image is not present.
var errNoImage = errors.New("no such image")

// apiError is an error answer of the engine.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("docker engine: %s (HTTP %d)", e.Message, e.Status)
}

func newEngine(host string) (*engine, error) {
	if host == "" {
		host = DefaultHost
	}
	tr := &http.Transport{MaxIdleConns: 4, IdleConnTimeout: 30 * time.Second}
	e := &engine{host: host, http: &http.Client{Transport: tr}}
	switch {
	case strings.HasPrefix(host, "unix://") || strings.HasPrefix(host, "/"):
		socket := strings.TrimPrefix(host, "unix://")
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
		e.base = "http://docker"
	case strings.HasPrefix(host, "tcp://"):
		e.base = "http://" + strings.TrimPrefix(host, "tcp://")
	default:
		return nil, fmt.Errorf("docker host %q: want unix:///path/to/socket or tcp://host:port", host)
	}
	return e, nil
}

// call sends a request and decodes a JSON answer into out (if not nil). Any status >= 400 is an *apiError.
func (e *engine) call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := e.send(ctx, method, path, query, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("docker engine %s %s: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns the response of a successful call (status < 400); the caller closes it.
func (e *engine) send(ctx context.Context, method, path string, query url.Values, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		if r, ok := in.(io.Reader); ok {
			body = r
		} else {
			b, err := json.Marshal(in)
			if err != nil {
				return nil, err
			}
			body = bytes.NewReader(b)
		}
	}
	u := e.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		if _, ok := in.(io.Reader); ok {
			req.Header.Set("Content-Type", "application/x-tar")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	resp, err := e.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("docker engine at %s: %w", e.host, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		var m struct {
			Message string `json:"message"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &m) != nil || m.Message == "" {
			m.Message = strings.TrimSpace(string(b))
		}
		return nil, &apiError{Status: resp.StatusCode, Message: m.Message}
	}
	return resp, nil
}

func (e *engine) ping(ctx context.Context) error {
	return e.call(ctx, http.MethodGet, "/_ping", nil, nil, nil)
}

type mount struct {
	Type     string
	Source   string
	Target   string
	ReadOnly bool
}

type hostConfig struct {
	Mounts      []mount
	NetworkMode string `json:",omitempty"`
	Memory      int64  `json:",omitempty"`
	NanoCpus    int64  `json:",omitempty"`
	PidsLimit   *int64 `json:",omitempty"`
}

type containerConfig struct {
	Image        string
	Env          []string
	User         string `json:",omitempty"`
	Labels       map[string]string
	AttachStdout bool
	AttachStderr bool
	Tty          bool
	OpenStdin    bool
	HostConfig   hostConfig
}

func (e *engine) create(ctx context.Context, c containerConfig) (string, error) {
	var out struct {
		ID string `json:"Id"`
	}
	err := e.call(ctx, http.MethodPost, "/containers/create", nil, c, &out)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return "", fmt.Errorf("%w: %s", errNoImage, ae.Message)
	}
	if err != nil {
		return "", err
	}
	return out.ID, nil
}

func (e *engine) start(ctx context.Context, id string) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
}

// wait blocks until the container is not running.
func (e *engine) wait(ctx context.Context, id string) error {
	var out struct {
		StatusCode int
		Error      *struct{ Message string }
	}
	if err := e.call(ctx, http.MethodPost, "/containers/"+id+"/wait", url.Values{"condition": {"not-running"}}, nil, &out); err != nil {
		return err
	}
	if out.Error != nil && out.Error.Message != "" {
		return fmt.Errorf("docker engine: %s", out.Error.Message)
	}
	return nil
}

func (e *engine) kill(ctx context.Context, id string) error {
	err := e.call(ctx, http.MethodPost, "/containers/"+id+"/kill", nil, nil, nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict { // not running any more
		return nil
	}
	return err
}

func (e *engine) remove(ctx context.Context, id string) error {
	err := e.call(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"true"}, "v": {"true"}}, nil, nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// logs copies the last lines of the container's stdout and stderr, interleaved, to w.
func (e *engine) logs(ctx context.Context, id string, lines int, w io.Writer) error {
	q := url.Values{"stdout": {"true"}, "stderr": {"true"}, "tail": {fmt.Sprint(lines)}}
	resp, err := e.send(ctx, http.MethodGet, "/containers/"+id+"/logs", q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return demux(resp.Body, w)
}

// demux copies the payloads of the engine's multiplexed stream (containers without a TTY): frames of an
// 8-byte header (stream, 0, 0, 0, big-endian size) and the payload.
func demux(r io.Reader, w io.Writer) error {
	br := bufio.NewReader(r)
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if hdr[0] > 3 || hdr[1] != 0 || hdr[2] != 0 || hdr[3] != 0 { // not multiplexed after all: raw output
			if _, err := w.Write(hdr[:]); err != nil {
				return err
			}
			_, err := io.Copy(w, br)
			return err
		}
		if _, err := io.CopyN(w, br, int64(binary.BigEndian.Uint32(hdr[4:]))); err != nil {
			return err
		}
	}
}

// pull fetches image from its registry, reading the progress stream to its end.
func (e *engine) pull(ctx context.Context, image string) error {
	resp, err := e.send(ctx, http.MethodPost, "/images/create", url.Values{"fromImage": {withTag(image)}}, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return progressError(resp.Body)
}

// progressError reads a JSON progress stream (pull, build) and returns the error it reports, if any.
func progressError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
	}
}

// withTag adds ":latest" to an image reference without tag or digest, as `docker run` does: without it the
// engine would pull every tag.
func withTag(image string) string {
	if strings.Contains(image, "@") {
		return image
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if strings.Contains(last, ":") {
		return image
	}
	return image + ":latest"
}
