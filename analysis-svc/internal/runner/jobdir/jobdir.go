// Package jobdir owns the job folder of the public analyzer protocol, shared by the process and docker
// runners: it writes the input side (input/input.json, input/attachment…, input/cacerts, an empty output/)
// and reads the output side (output/output.json and the file artifacts next to it), and it keeps the tail of
// a worker's console output for failure messages.
//
// The folder, as a worker sees it (reference: analyzers-notes §2.1, cortex-notes §4.4):
//
//	<dir>/input/input.json         compact UTF-8 JSON, keys in this order:
//	                               analyzer, value:  data (string)
//	                               analyzer, file:   file (base name of input/attachment…), filename, contentType
//	                               responder:        data (any JSON, e.g. the case object)
//	                               then dataType, tlp, pap, message, parameters ({} when none), config ({} when none)
//	<dir>/input/attachment<random> a copy of the observable's file (file observables only)
//	<dir>/input/cacerts            config.cacerts when it is a non-blank string
//	<dir>/output/                  created empty: cortexutils' build_artifact needs it to exist
//
// Folders are created 0700 and files 0600. Options.Access (job.directory_group, job.directory_mode) opens them
// to one group, e.g. 0750/0640 and the group of a daemon that workers hand file paths to (clamd); others never
// get access. Options.GroupReadable is the same with 0750 and the service's own group. config is written as the caller
// built it (definition config ⊕ worker configuration ⊕ proxy, analysis.runConfig); it is not merged again.
package jobdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// Names inside the job folder.
const (
	InputDir    = "input"
	OutputDir   = "output"
	InputFile   = "input.json"
	OutputFile  = "output.json"
	CACertsFile = "cacerts"
)

// DefaultContentType is the content type of a file that comes without one.
const DefaultContentType = "application/octet-stream"

// Options tunes how a job folder is written.
type Options struct {
	// Access is who besides the service may read the folder (zero value: folders 0700, files 0600).
	Access FolderAccess
	// GroupReadable makes folders 0750 and files 0640 instead of 0700/0600 (when Access does not set a mode).
	GroupReadable bool
}

func (o Options) access() FolderAccess {
	a := o.Access
	if o.GroupReadable && a.Mode == 0 {
		a.Mode = 0o750
	}
	return a
}

// Job is a prepared job folder.
type Job struct {
	Dir        string // absolute path of the job folder
	CACerts    bool   // input/cacerts was written
	HTTPProxy  string // config.proxy.http (or config.proxy_http) when a non-blank string
	HTTPSProxy string // config.proxy.https (or config.proxy_https) when a non-blank string
}

// Prepare creates the job folder dir (if needed) with input/ and output/, copies the observable's file and
// writes input/input.json (and input/cacerts). kind selects the analyzer or responder shape of input.json.
// Errors mean the job could not be prepared (the worker must not run).
func Prepare(dir string, kind analysis.Kind, in analysis.RunInput, opts Options) (*Job, error) {
	access := opts.access()
	dirMode := access.DirMode()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("job folder: %w", err)
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, fmt.Errorf("create the job folder: %w", err)
	}
	if access.Shared() || access.SetGroup {
		if err := access.Apply(abs, true); err != nil {
			return nil, fmt.Errorf("job folder: %w", err)
		}
	}
	inDir, outDir := filepath.Join(abs, InputDir), filepath.Join(abs, OutputDir)
	for _, d := range []string{inDir, outDir} {
		if err := os.Mkdir(d, dirMode); err != nil {
			return nil, fmt.Errorf("create the job folder: %w", err)
		}
		if err := access.Apply(d, true); err != nil { // the umask may have removed bits we want
			return nil, fmt.Errorf("create the job folder: %w", err)
		}
	}
	job := &Job{Dir: abs}

	common := commonInput{DataType: in.DataType, TLP: in.TLP, PAP: in.PAP, Message: in.Message,
		Parameters: in.Parameters, Config: in.Config}
	if common.Parameters == nil {
		common.Parameters = map[string]any{}
	}
	if common.Config == nil {
		common.Config = map[string]any{}
	}
	var doc any
	switch {
	case in.File != "":
		if kind == analysis.KindResponder {
			return nil, errors.New("a responder job cannot have a file")
		}
		name, err := copyAttachment(in.File, inDir, access)
		if err != nil {
			return nil, err
		}
		ct := in.ContentType
		if ct == "" {
			ct = DefaultContentType
		}
		filename := in.Filename
		if filename == "" {
			filename = filepath.Base(in.File)
		}
		doc = fileInput{File: name, Filename: filename, ContentType: ct, commonInput: common}
	case kind == analysis.KindResponder:
		doc = valueInput{Data: in.Data, commonInput: common}
	default:
		s, ok := in.Data.(string)
		if !ok {
			if in.DataType == "file" {
				return nil, errors.New("a file job has no file")
			}
			return nil, fmt.Errorf("analyzer data must be a string, not %T", in.Data)
		}
		doc = valueInput{Data: s, commonInput: common}
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the reference writes '<', '>' and '&' as they are
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode input.json: %w", err)
	}
	if err := writeFile(filepath.Join(inDir, InputFile), bytes.TrimRight(buf.Bytes(), "\n"), access); err != nil {
		return nil, fmt.Errorf("write input.json: %w", err)
	}

	if ca, ok := in.Config["cacerts"].(string); ok && strings.TrimSpace(ca) != "" {
		if err := writeFile(filepath.Join(inDir, CACertsFile), []byte(ca), access); err != nil {
			return nil, fmt.Errorf("write cacerts: %w", err)
		}
		job.CACerts = true
	}
	job.HTTPProxy = proxy(in.Config, "http")
	job.HTTPSProxy = proxy(in.Config, "https")
	return job, nil
}

// CACertsPath is the path of input/cacerts inside a job folder mounted at root ("" when none was written).
func (j *Job) CACertsPath(root string) string {
	if !j.CACerts {
		return ""
	}
	return filepath.Join(root, InputDir, CACertsFile)
}

type commonInput struct {
	DataType   string         `json:"dataType"`
	TLP        int            `json:"tlp"`
	PAP        int            `json:"pap"`
	Message    string         `json:"message"`
	Parameters map[string]any `json:"parameters"`
	Config     map[string]any `json:"config"`
}

type valueInput struct {
	Data any `json:"data"`
	commonInput
}

type fileInput struct {
	File        string `json:"file"`
	Filename    string `json:"filename"`
	ContentType string `json:"contentType"`
	commonInput
}

// proxy reads the proxy the worker should use: config.proxy.<scheme> as the protocol nests it, else the flat
// worker setting config.proxy_<scheme>.
func proxy(conf map[string]any, scheme string) string {
	if p, ok := conf["proxy"].(map[string]any); ok {
		if v, ok := p[scheme].(string); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	if v, ok := conf["proxy_"+scheme].(string); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return ""
}

// copyAttachment copies src to inDir/attachment<random> and returns the base name.
func copyAttachment(src, inDir string, access FolderAccess) (string, error) {
	r, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("read the observable's file: %w", err)
	}
	defer r.Close()
	if st, err := r.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", errors.New("the observable's file is not a regular file")
	}
	w, err := os.CreateTemp(inDir, "attachment")
	if err != nil {
		return "", fmt.Errorf("copy the observable's file: %w", err)
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return "", fmt.Errorf("copy the observable's file: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("copy the observable's file: %w", err)
	}
	if err := access.Apply(w.Name(), false); err != nil {
		return "", fmt.Errorf("copy the observable's file: %w", err)
	}
	return filepath.Base(w.Name()), nil
}

func writeFile(path string, data []byte, access FolderAccess) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return access.Apply(path, false)
}
