// Package analysissvc is the adapter of case-svc to analysis-svc (and any Cortex-compatible server): the HTTP
// client of its REST API (bounded retries, per-attempt timeouts, Bearer keys, an Idempotency-Key on job
// creation, the status probe) and the Adapter that presents it as the connector's AnalysisServer. The
// connector package, the domain of analyzer jobs and responder actions, knows only that interface.
package analysissvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/openir/platform/pkg/apperr"
)

// Server is one configured analysis server; analysisId in requests is its Name.
type Server struct {
	Name          string
	URL           string
	Key           string
	Timeout       time.Duration // per attempt; zero = 30 s
	Organisations []string      // case-svc organisations that may use it; empty or "*" = all
}

// Serves reports whether the server is open to an organisation.
func (s Server) Serves(org string) bool {
	if len(s.Organisations) == 0 {
		return true
	}
	for _, o := range s.Organisations {
		if o == "*" || o == org {
			return true
		}
	}
	return false
}

// Client talks to one analysis server. It is safe for concurrent use.
type Client struct {
	srv  Server
	base string
	rc   *retryablehttp.Client // short calls: each attempt bounded by the server's timeout
	long *retryablehttp.Client // long polls and file transfers: bounded by the call's context
	log  *slog.Logger
}

// Options tune retries (tests shorten them).
type Options struct {
	RetryMax     int           // default 4
	RetryWaitMin time.Duration // default 200 ms
	RetryWaitMax time.Duration // default 5 s
}

// New returns a client of s. The key is only ever sent in the Authorization header, never logged.
func New(s Server, opts Options, log *slog.Logger) *Client {
	if s.Timeout <= 0 {
		s.Timeout = 30 * time.Second
	}
	if opts.RetryMax == 0 {
		opts.RetryMax = 4
	}
	if opts.RetryWaitMin == 0 {
		opts.RetryWaitMin = 200 * time.Millisecond
	}
	if opts.RetryWaitMax == 0 {
		opts.RetryWaitMax = 5 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mk := func(timeout time.Duration) *retryablehttp.Client {
		rc := retryablehttp.NewClient()
		rc.RetryMax, rc.RetryWaitMin, rc.RetryWaitMax = opts.RetryMax, opts.RetryWaitMin, opts.RetryWaitMax
		rc.HTTPClient.Timeout = timeout
		rc.Logger = nil // retryablehttp would log URLs; we log our own lines
		rc.RequestLogHook = func(_ retryablehttp.Logger, r *http.Request, attempt int) {
			if attempt > 0 {
				log.Warn("retry analysis server call", "server", s.Name, "method", r.Method, "path", r.URL.Path, "attempt", attempt)
			}
		}
		rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
		return rc
	}
	return &Client{srv: s, base: strings.TrimRight(s.URL, "/"), rc: mk(s.Timeout), long: mk(0), log: log.With("server", s.Name)}
}

// Server returns the server's configuration.
func (c *Client) Server() Server { return c.srv }

// Name is the server's name (the analysisId).
func (c *Client) Name() string { return c.srv.Name }

// Worker is an analyzer or responder as a server lists it.
type Worker struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Description  string   `json:"description"`
	DataTypeList []string `json:"dataTypeList"`
	DefinitionID string   `json:"workerDefinitionId"`
	MaxTLP       *int     `json:"maxTlp,omitempty"`
	MaxPAP       *int     `json:"maxPap,omitempty"`
}

// Attachment is a file on the server.
type Attachment struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Hashes      []string `json:"hashes"`
	Size        int64    `json:"size"`
	ContentType string   `json:"contentType"`
}

// Artifact is an observable a job extracted.
type Artifact struct {
	DataType   string      `json:"dataType"`
	Data       string      `json:"data,omitempty"`
	Attachment *Attachment `json:"attachment,omitempty"`
	Message    string      `json:"message,omitempty"`
	TLP        *int        `json:"tlp,omitempty"`
	Tags       []string    `json:"tags,omitempty"`
}

// Report is a finished job's report. Its numbers are json.Number (the server's exact text).
type Report struct {
	Success      bool             `json:"success"`
	Summary      map[string]any   `json:"summary,omitempty"`
	Full         map[string]any   `json:"full,omitempty"`
	Artifacts    []Artifact       `json:"artifacts,omitempty"`
	Operations   []map[string]any `json:"operations,omitempty"`
	ErrorMessage string           `json:"errorMessage,omitempty"`
}

// ServerJob is a job as the server reports it (the wire form, which Adapter turns into a RemoteJob); Report is
// set once it finished.
type ServerJob struct {
	ID                   string
	Status               string
	AnalyzerID           string
	AnalyzerName         string
	AnalyzerDefinitionID string
	ResponderID          string
	ResponderName        string
	DataType             string
	ErrorMessage         string
	StartDate            int64
	EndDate              int64
	CreatedAt            int64
	Report               *Report
}

// Finished reports whether the job ended (Success, Failure or Deleted).
func (j ServerJob) Finished() bool {
	return j.Status == "Success" || j.Status == "Failure" || j.Status == "Deleted"
}

// UnmarshalJSON reads a job, whose `report` is an object once finished and a status string before.
func (j *ServerJob) UnmarshalJSON(b []byte) error {
	var raw struct {
		ID                    string          `json:"id"`
		Status                string          `json:"status"`
		AnalyzerID            string          `json:"analyzerId"`
		AnalyzerName          string          `json:"analyzerName"`
		AnalyzerDefinitionID  string          `json:"analyzerDefinitionId"`
		ResponderID           string          `json:"responderId"`
		ResponderName         string          `json:"responderName"`
		DataType              string          `json:"dataType"`
		ErrorMessage          string          `json:"errorMessage"`
		StartDate             int64           `json:"startDate"`
		EndDate               int64           `json:"endDate"`
		CreatedAt             int64           `json:"createdAt"`
		Report                json.RawMessage `json:"report"`
		ResponderDefinitionID string          `json:"responderDefinitionId"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*j = ServerJob{ID: raw.ID, Status: raw.Status, AnalyzerID: raw.AnalyzerID, AnalyzerName: raw.AnalyzerName,
		AnalyzerDefinitionID: raw.AnalyzerDefinitionID, ResponderID: raw.ResponderID, ResponderName: raw.ResponderName,
		DataType: raw.DataType, ErrorMessage: raw.ErrorMessage, StartDate: raw.StartDate, EndDate: raw.EndDate,
		CreatedAt: raw.CreatedAt}
	if len(raw.Report) > 0 && raw.Report[0] == '{' {
		var r Report
		if err := decodeExact(raw.Report, &r); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		j.Report = &r
	}
	return nil
}

// decodeExact decodes JSON with numbers as json.Number, so a report's values keep their exact text.
func decodeExact(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(out)
}

// File is a file observable to send.
type File struct {
	Name        string
	ContentType string
	Open        func() (io.ReadCloser, error)
}

// JobRequest is what a job is run on.
type JobRequest struct {
	DataType   string         `json:"dataType"`
	Data       any            `json:"data,omitempty"` // a string for analyzers, an object for responders
	TLP        int            `json:"tlp"`
	PAP        int            `json:"pap"`
	Message    string         `json:"message"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Label      string         `json:"label,omitempty"`
	File       *File          `json:"-"`
}

// Analyzers lists the analyzers the key's organization has enabled.
func (c *Client) Analyzers(ctx context.Context) ([]Worker, error) {
	var ws []Worker
	return ws, c.do(ctx, http.MethodGet, "/api/analyzer?range=all", nil, "", &ws)
}

// AnalyzersFor lists the analyzers that accept a data type.
func (c *Client) AnalyzersFor(ctx context.Context, dataType string) ([]Worker, error) {
	var ws []Worker
	return ws, c.do(ctx, http.MethodGet, "/api/analyzer/type/"+url.PathEscape(dataType), nil, "", &ws)
}

// Responders lists the enabled responders.
func (c *Client) Responders(ctx context.Context) ([]Worker, error) {
	var ws []Worker
	return ws, c.do(ctx, http.MethodGet, "/api/responder?range=all", nil, "", &ws)
}

// RespondersFor lists the responders that accept a data type (e.g. thehive:case).
func (c *Client) RespondersFor(ctx context.Context, dataType string) ([]Worker, error) {
	var ws []Worker
	return ws, c.do(ctx, http.MethodGet, "/api/responder/type/"+url.PathEscape(dataType), nil, "", &ws)
}

// RunAnalyzer creates a job. idempotencyKey makes retries (ours and the caller's) create one job only.
func (c *Client) RunAnalyzer(ctx context.Context, analyzerID string, req JobRequest, idempotencyKey string) (ServerJob, error) {
	var j ServerJob
	return j, c.submit(ctx, "/api/analyzer/"+url.PathEscape(analyzerID)+"/run", req, idempotencyKey, &j)
}

// RunResponder creates a responder job.
func (c *Client) RunResponder(ctx context.Context, responderID string, req JobRequest, idempotencyKey string) (ServerJob, error) {
	var j ServerJob
	return j, c.submit(ctx, "/api/responder/"+url.PathEscape(responderID)+"/run", req, idempotencyKey, &j)
}

// WaitReport long-polls a job for at most atMost and returns it with its report once finished.
func (c *Client) WaitReport(ctx context.Context, jobID string, atMost time.Duration) (ServerJob, error) {
	var j ServerJob
	secs := int(atMost / time.Second)
	if secs < 1 {
		secs = 1
	}
	path := fmt.Sprintf("/api/job/%s/waitreport?atMost=%dsecond", url.PathEscape(jobID), secs)
	return j, c.doTimeout(ctx, http.MethodGet, path, nil, "", &j, atMost+c.srv.Timeout, nil)
}

// Job returns a job with its report.
func (c *Client) Job(ctx context.Context, jobID string) (ServerJob, error) {
	var j ServerJob
	return j, c.do(ctx, http.MethodGet, "/api/job/"+url.PathEscape(jobID)+"/report", nil, "", &j)
}

// Download fetches a stored file (an observable's or a file artifact's); the caller closes it.
func (c *Client) Download(ctx context.Context, hash string) (io.ReadCloser, error) {
	var body io.ReadCloser
	err := c.doTimeout(ctx, http.MethodGet, "/api/datastore/"+url.PathEscape(hash), nil, "", nil, 10*time.Minute, &body)
	return body, err
}

func (c *Client) submit(ctx context.Context, path string, req JobRequest, key string, out any) error {
	hdr := http.Header{}
	if key != "" {
		hdr.Set("Idempotency-Key", key)
	}
	if req.File == nil {
		b, err := json.Marshal(req)
		if err != nil {
			return apperr.Wrap(apperr.BadRequest, "cannot encode the job", err)
		}
		return c.doHeader(ctx, http.MethodPost, path, b, "application/json", out, hdr)
	}
	js, err := json.Marshal(req)
	if err != nil {
		return apperr.Wrap(apperr.BadRequest, "cannot encode the job", err)
	}
	// The multipart body is streamed, and made again for each attempt.
	boundary := multipart.NewWriter(io.Discard).Boundary()
	body := func() (io.Reader, error) {
		f, err := req.File.Open()
		if err != nil {
			return nil, err
		}
		pr, pw := io.Pipe()
		go func() {
			defer f.Close()
			mw := multipart.NewWriter(pw)
			_ = mw.SetBoundary(boundary)
			err := mw.WriteField("_json", string(js))
			if err == nil {
				var fw io.Writer
				fw, err = mw.CreateFormFile("attachment", req.File.Name)
				if err == nil {
					_, err = io.Copy(fw, f)
				}
			}
			if err == nil {
				err = mw.Close()
			}
			pw.CloseWithError(err)
		}()
		return pr, nil
	}
	return c.send(ctx, http.MethodPost, path, retryablehttp.ReaderFunc(body), "multipart/form-data; boundary="+boundary,
		out, 10*time.Minute, hdr, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, ct string, out any) error {
	return c.doHeader(ctx, method, path, body, ct, out, nil)
}

func (c *Client) doHeader(ctx context.Context, method, path string, body []byte, ct string, out any, hdr http.Header) error {
	var b any
	if body != nil {
		b = body
	}
	return c.send(ctx, method, path, b, ct, out, c.srv.Timeout, hdr, nil)
}

func (c *Client) doTimeout(ctx context.Context, method, path string, body []byte, ct string, out any, timeout time.Duration, stream *io.ReadCloser) error {
	var b any
	if body != nil {
		b = body
	}
	return c.send(ctx, method, path, b, ct, out, timeout, nil, stream)
}

// send makes one call with retries; each attempt has its own deadline. The response becomes out (JSON), or
// *stream (the open body), or an error of our kinds naming the server.
func (c *Client) send(ctx context.Context, method, path string, body any, ct string, out any, timeout time.Duration,
	hdr http.Header, stream *io.ReadCloser) error {
	rc := c.rc
	cancel := context.CancelFunc(func() {})
	if timeout != c.srv.Timeout {
		rc = c.long
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	release := true
	defer func() {
		if release {
			cancel()
		}
	}()
	req, err := retryablehttp.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return apperr.Wrap(apperr.Internal, "cannot build the request", err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.srv.Key)
	req.Header.Set("Accept", "application/json")
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := rc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.Warn("analysis server call failed", "method", method, "path", path, "err", redact(err))
		return apperr.Wrap(apperr.Unavailable, fmt.Sprintf("analysis server %s is unreachable", c.srv.Name), err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return c.remoteError(resp)
	}
	if stream != nil {
		release = false // the body outlives this call: closing it releases the deadline
		*stream = cancelOnClose{resp.Body, cancel}
		return nil
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, 256<<20))
	dec.UseNumber() // report values keep the worker's text: 1.0 stays 1.0, 2^63-1 is not rounded
	if err := dec.Decode(out); err != nil {
		return apperr.Wrap(apperr.Unavailable, fmt.Sprintf("analysis server %s sent an unreadable answer", c.srv.Name), err)
	}
	return nil
}

// redact drops the URL's query from errors that quote it (it never holds the key, which is a header, but
// keep logs to paths).
func redact(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + strings.SplitN(ue.URL, "?", 2)[0] + ": " + ue.Err.Error()
	}
	return err.Error()
}

// remoteError maps the server's error to our kinds, with its name in the message.
func (c *Client) remoteError(resp *http.Response) error {
	var e struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e)
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	text := fmt.Sprintf("analysis server %s: %s", c.srv.Name, msg)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return apperr.New(apperr.NotFound, text)
	case resp.StatusCode == http.StatusTooManyRequests:
		return apperr.New(apperr.RateLimited, text)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		// Our key is refused: a configuration problem of this server, not the caller's credentials.
		c.log.Error("analysis server refused the connector's key", "status", resp.StatusCode)
		return apperr.New(apperr.Unavailable, fmt.Sprintf("analysis server %s refused the connector's credentials (%d)", c.srv.Name, resp.StatusCode))
	case resp.StatusCode >= 500:
		return apperr.New(apperr.Unavailable, text)
	case resp.StatusCode >= 400:
		return apperr.New(apperr.BadRequest, text)
	}
	return apperr.New(apperr.Unavailable, text)
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
