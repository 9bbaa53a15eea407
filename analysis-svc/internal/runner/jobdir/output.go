package jobdir

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// DefaultMaxOutput bounds output/output.json.
const DefaultMaxOutput = 64 << 20

// ErrNoOutput is returned by ReadOutput when output/output.json is missing or empty (or is a folder): the
// runner then reports the worker's console output with NoOutput.
var ErrNoOutput = errors.New("no output")

// ReadOptions tunes ReadOutput.
type ReadOptions struct {
	MaxSize int64        // largest output.json accepted; 0 = DefaultMaxOutput
	Log     *slog.Logger // warnings about dropped artifacts and operations; nil = discard
	LogArgs []any        // attributes added to every warning (e.g. "definition", id)
}

// ReadOutput reads <dir>/output/output.json as the reference server does (cortex-notes §4.5):
//
//   - success missing or not true → Failure with errorMessage (string; "no error message" when absent) and
//     input (a string as is, any other JSON as its compact text);
//   - success true → full must be an object (else Failure "invalid output.json: …"); summary an object (else
//     {}); artifacts an array; operations an array of objects (other entries dropped; default []).
//
// Artifacts: a dataType "file" artifact must name, in file, a regular file directly inside output/ (no
// separator, not "." or "..", not a symlink, not escaping through a replaced output/); it is returned with File
// = that absolute path, Filename (default: the file's name) and ContentType (default
// application/octet-stream). Another artifact needs a string data (numbers and booleans are kept as their
// JSON text). Invalid artifacts are dropped with a warning in the log; the reference instead fails the whole
// job, which would throw away a good report for one bad file name.
//
// Non-standard JSON that Python's json module writes by default (NaN, Infinity, -Infinity) is read as null.
//
// Numbers are kept as the worker wrote them (json.Number: 1.0 stays 1.0, 9223372036854775807 stays exact),
// in summary, full, operations and artifacts alike; they are stored and served as that text.
//
// ErrNoOutput is the only error: every other problem is a Failure output.
func ReadOutput(dir string, opts ReadOptions) (analysis.RunOutput, error) {
	max := opts.MaxSize
	if max <= 0 {
		max = DefaultMaxOutput
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	outDir := filepath.Join(dir, OutputDir)
	root, err := openOutputRoot(outDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return analysis.RunOutput{}, ErrNoOutput
		}
		return Failure("cannot read the output folder: " + err.Error()), nil
	}
	defer root.Close()

	data, err := readRegular(root, OutputFile, max)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errIsDir):
		return analysis.RunOutput{}, ErrNoOutput
	case errors.Is(err, errTooLarge):
		return Failure(fmt.Sprintf("output too large: output.json is over %d bytes", max)), nil
	case err != nil:
		return Failure("cannot read output.json: " + err.Error()), nil
	case len(bytes.TrimSpace(data)) == 0:
		return analysis.RunOutput{}, ErrNoOutput
	}

	doc, err := decodeObject(data)
	if err != nil {
		var err2 error
		if doc, err2 = decodeObject(nonFiniteToNull(data)); err2 != nil {
			return Failure("invalid output.json: " + err.Error()), nil
		}
	}
	if doc == nil {
		return Failure("invalid output.json: not a JSON object"), nil
	}

	if ok, _ := doc["success"].(bool); !ok {
		out := analysis.RunOutput{Success: false}
		switch m := doc["errorMessage"].(type) {
		case string:
			out.ErrorMessage = m
		case nil:
			out.ErrorMessage = "no error message"
		default:
			out.ErrorMessage = compact(m)
		}
		switch in := doc["input"].(type) {
		case nil:
		case string:
			out.Input = in
		default:
			out.Input = compact(in)
		}
		return out, nil
	}

	full, ok := doc["full"].(map[string]any)
	if !ok {
		return Failure("invalid output.json: full must be an object"), nil
	}
	out := analysis.RunOutput{Success: true, Full: full, Summary: map[string]any{}, Operations: []map[string]any{}}
	if s, ok := doc["summary"].(map[string]any); ok {
		out.Summary = s
	} else if doc["summary"] != nil {
		log.Warn("worker summary is not an object; using {}", opts.LogArgs...)
	}
	switch ops := doc["operations"].(type) {
	case nil:
	case []any:
		for i, op := range ops {
			if m, ok := op.(map[string]any); ok {
				out.Operations = append(out.Operations, m)
			} else {
				log.Warn("worker operation dropped: not an object", append([]any{"index", i}, opts.LogArgs...)...)
			}
		}
	default:
		log.Warn("worker operations dropped: not an array", opts.LogArgs...)
	}
	switch arts := doc["artifacts"].(type) {
	case nil:
	case []any:
		for i, a := range arts {
			art, err := artifact(root, outDir, a)
			if err != nil {
				log.Warn("worker artifact dropped", append([]any{"index", i, "err", err}, opts.LogArgs...)...)
				continue
			}
			out.Artifacts = append(out.Artifacts, art)
		}
	default:
		log.Warn("worker artifacts dropped: not an array", opts.LogArgs...)
	}
	return out, nil
}

// Failure is a failed run with msg as its error message.
func Failure(msg string) analysis.RunOutput {
	return analysis.RunOutput{Success: false, ErrorMessage: msg}
}

// NoOutput is the Failure of a worker that wrote no output.json: its console output, or "no output".
func NoOutput(console string) analysis.RunOutput {
	if strings.TrimSpace(console) == "" {
		return Failure("no output")
	}
	return Failure(console)
}

// Interrupted is the Failure of a worker stopped because ctxErr (context.DeadlineExceeded: a timeout; else a
// cancellation) after it ran for elapsed, followed by its console output.
func Interrupted(ctxErr error, elapsed time.Duration, console string) analysis.RunOutput {
	what := "was cancelled"
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		what = "timed out"
	}
	msg := fmt.Sprintf("The job %s after %s and its worker was killed.", what, roundDuration(elapsed))
	if strings.TrimSpace(console) != "" {
		msg += " Worker output:\n" + console
	}
	return Failure(msg)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Second)
	}
}

var (
	errIsDir    = errors.New("is a directory")
	errTooLarge = errors.New("too large")
)

// openOutputRoot opens output/ as an os.Root, refusing an output/ that a worker replaced by a symlink.
func openOutputRoot(outDir string) (*os.Root, error) {
	lst, err := os.Lstat(outDir)
	if err != nil {
		return nil, err
	}
	if !lst.IsDir() {
		return nil, errors.New("output is not a folder")
	}
	root, err := os.OpenRoot(outDir)
	if err != nil {
		return nil, err
	}
	st, err := root.Stat(".")
	if err != nil || !os.SameFile(st, lst) {
		root.Close()
		return nil, errors.New("output folder changed while being read")
	}
	return root, nil
}

// readRegular reads name, directly in root, if it is a regular file (not a symlink) of at most max bytes.
func readRegular(root *os.Root, name string, max int64) ([]byte, error) {
	lst, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	switch {
	case lst.IsDir():
		return nil, errIsDir
	case !lst.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", name)
	case lst.Size() > max:
		return nil, errTooLarge
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(st, lst) {
		return nil, fmt.Errorf("%s changed while being read", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, errTooLarge
	}
	return data, nil
}

// artifact validates one entry of the artifacts array.
func artifact(root *os.Root, outDir string, v any) (analysis.OutputArtifact, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return analysis.OutputArtifact{}, errors.New("not an object")
	}
	dt, _ := m["dataType"].(string)
	if strings.TrimSpace(dt) == "" {
		return analysis.OutputArtifact{}, errors.New("no dataType")
	}
	a := analysis.OutputArtifact{DataType: dt}
	a.Message, _ = m["message"].(string)
	if tags, ok := m["tags"].([]any); ok {
		for _, t := range tags {
			if s, ok := t.(string); ok {
				a.Tags = append(a.Tags, s)
			}
		}
	}
	if n, ok := m["tlp"].(json.Number); ok {
		if v, err := strconv.ParseFloat(n.String(), 64); err == nil && v == float64(int(v)) && v >= 0 && v <= 3 {
			tlp := int(v)
			a.TLP = &tlp
		}
	}
	if dt == "file" {
		name, _ := m["file"].(string)
		if err := checkArtifactFile(root, name); err != nil {
			return analysis.OutputArtifact{}, err
		}
		a.File = filepath.Join(outDir, name)
		a.Filename, _ = m["filename"].(string)
		if a.Filename == "" {
			a.Filename = name
		}
		a.ContentType, _ = m["contentType"].(string)
		if a.ContentType == "" {
			a.ContentType = DefaultContentType
		}
		return a, nil
	}
	switch d := m["data"].(type) {
	case string:
		a.Data = d
	case json.Number:
		a.Data = d.String() // as written
	case bool:
		a.Data = strconv.FormatBool(d)
	default:
		return analysis.OutputArtifact{}, errors.New("data is not a string")
	}
	if a.Data == "" {
		return analysis.OutputArtifact{}, errors.New("empty data")
	}
	return a, nil
}

func checkArtifactFile(root *os.Root, name string) error {
	if name == "" {
		return errors.New("file artifact without a file")
	}
	if !plainName(name) {
		return fmt.Errorf("file %q is not a name directly inside output/", name)
	}
	st, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("file %q does not exist in output/", name)
	}
	if err != nil {
		return fmt.Errorf("file %q: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("file %q is not a regular file", name)
	}
	return nil
}

// plainName reports whether name names an entry directly inside a folder: not empty, ".", "..", and without a
// separator or NUL.
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

// decodeObject decodes a JSON document with numbers as json.Number; nil when it is not an object.
func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid character after top-level value")
	}
	m, _ := v.(map[string]any)
	return m, nil
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// nonFiniteToNull replaces the bare tokens NaN, Infinity and -Infinity (outside strings) with null.
func nonFiniteToNull(data []byte) []byte {
	var out bytes.Buffer
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out.WriteString("null")
			i += len("NaN") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out.WriteString("null")
			i += len("-Infinity") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out.WriteString("null")
			i += len("Infinity") - 1
			continue
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}
