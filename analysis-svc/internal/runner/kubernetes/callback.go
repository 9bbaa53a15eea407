package kubernetes

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
)

// CallbackPath starts the two routes of the callback listener: GET <CallbackPath><job name>/input (the tar
// of the job folder's input/) and POST <CallbackPath><job name>/output (the tar of output/). Each run has two
// 256-bit tokens, sent as "Authorization: Bearer": each works once, and both die when the run ends. Nothing
// else is served on that port.
const CallbackPath = "/jobio/v1/"

// callbacks holds the runs whose pods may call back.
type callbacks struct {
	limits  jobdir.OutputLimits
	access  jobdir.FolderAccess
	log     *slog.Logger
	metrics *Metrics // may be nil

	mu   sync.Mutex
	runs map[string]*callbackRun // by Job name
}

// callbackRun is one run's side of the exchange.
type callbackRun struct {
	c      *callbacks
	name   string
	dir    string
	in     [32]byte // SHA-256 of the tokens: the tokens themselves are not kept
	out    [32]byte
	inOK   bool // the token still works
	outOK  bool
	upload chan struct{} // closed once an upload was received (refused or not)
	// set under c.mu before upload is closed
	fetched     bool
	uploadErr   error // the reason an upload was refused
	uploadFiles int
}

func newCallbacks(limits jobdir.OutputLimits, access jobdir.FolderAccess, log *slog.Logger, metrics *Metrics) *callbacks {
	return &callbacks{limits: limits, access: access, log: log, metrics: metrics, runs: map[string]*callbackRun{}}
}

// register makes the tokens of the run of Job name, whose job folder is dir. close ends them.
func (c *callbacks) register(name, dir string) (run *callbackRun, inToken, outToken string) {
	inToken, outToken = rand.Text()+rand.Text(), rand.Text()+rand.Text() // 2×26 base32 characters: 260 bits
	run = &callbackRun{c: c, name: name, dir: dir, in: sha256.Sum256([]byte(inToken)), out: sha256.Sum256([]byte(outToken)),
		inOK: true, outOK: true, upload: make(chan struct{})}
	c.mu.Lock()
	c.runs[name] = run
	c.mu.Unlock()
	return run, inToken, outToken
}

// close ends the run's tokens: a late call gets 401.
func (r *callbackRun) close() {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if r.c.runs[r.name] == r {
		delete(r.c.runs, r.name)
	}
	r.inOK, r.outOK = false, false
}

// uploaded reports whether an upload arrived, and the reason it was refused.
func (r *callbackRun) uploaded() (bool, error) {
	select {
	case <-r.upload:
		r.c.mu.Lock()
		defer r.c.mu.Unlock()
		return true, r.uploadErr
	default:
		return false, nil
	}
}

// take spends the token of route (input or output) of the run of name: the run, or nil when the token is
// wrong, used or dead.
func (c *callbacks) take(name, route, token string) *callbackRun {
	sum := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	run := c.runs[name]
	if run == nil || token == "" {
		return nil
	}
	switch route {
	case "input":
		if !run.inOK || subtle.ConstantTimeCompare(sum[:], run.in[:]) != 1 {
			return nil
		}
		run.inOK = false
	case "output":
		if !run.outOK || subtle.ConstantTimeCompare(sum[:], run.out[:]) != 1 {
			return nil
		}
		run.outOK = false
	default:
		return nil
	}
	return run
}

// ServeHTTP serves the two routes.
func (c *callbacks) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rest, ok := strings.CutPrefix(req.URL.Path, CallbackPath)
	name, route, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || name == "" || (route != "input" && route != "output") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	want := http.MethodGet
	if route == "output" {
		want = http.MethodPost
	}
	if req.Method != want {
		w.Header().Set("Allow", want)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	token, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	run := c.take(name, route, token)
	if run == nil {
		c.metrics.callback(route, "unauthorized", 0)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	start := time.Now()
	if route == "input" {
		w.Header().Set("Content-Type", "application/x-tar")
		if err := jobdir.PackInput(w, run.dir); err != nil {
			c.metrics.callback(route, "error", time.Since(start))
			c.log.Warn("send a job's input to its pod", "job", name, "err", err)
			return // the pod sees a cut stream and fails
		}
		c.metrics.callback(route, "ok", time.Since(start))
		c.mu.Lock()
		run.fetched = true
		c.mu.Unlock()
		return
	}
	var body = http.MaxBytesReader(w, req.Body, c.maxBody())
	err := jobdir.UnpackOutput(body, run.dir, c.limits, c.access)
	c.mu.Lock()
	run.uploadErr = err
	c.mu.Unlock()
	close(run.upload)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		c.metrics.callback(route, "refused", time.Since(start))
		http.Error(w, "the output is too large", http.StatusRequestEntityTooLarge)
	case errors.Is(err, jobdir.ErrUploadRefused):
		c.metrics.callback(route, "refused", time.Since(start))
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
	case err != nil:
		c.metrics.callback(route, "error", time.Since(start))
		c.log.Warn("receive a job's output from its pod", "job", name, "err", err)
		http.Error(w, "the output could not be stored", http.StatusInternalServerError)
	default:
		c.metrics.callback(route, "ok", time.Since(start))
		w.WriteHeader(http.StatusNoContent)
	}
}

// maxBody bounds an upload's stream: the files' limit plus tar headers.
func (c *callbacks) maxBody() int64 {
	l := c.limits
	if l.MaxTotal > 0 {
		return l.MaxTotal + int64(l.MaxFiles+2)*1024 + 1024
	}
	return 1 << 62
}
