// Package catalog discovers analyzer and responder definitions written in the public definition ("flavor")
// format (reference: analyzers-notes §1, cortex-notes §4.1–4.2) in the folders and files configured in
// analyzer.paths and responder.paths.
//
// Discovery, as the reference does it:
//
//   - A configured directory is an analyzers root: every <root>/<sub>/*.json is read (one level down, sorted,
//     not recursive; a link is followed only when it stays in the root). A configured regular file (or
//     file:// URL) is read alone; its root is the folder above the file's folder. http(s) URLs are not fetched (warning): download the catalog and
//     configure the file.
//   - A file holds one definition object or an array of them.
//   - Required strings: name, version, description, author, url, license. name and version must not be
//     blank, and the id must be usable in a URL path (no '/', '\', '?', '#', '%', whitespace or control
//     characters). Optional: dataTypeList (array of strings, default []), command, dockerImage (strings),
//     baseConfig (string, default name), config (object, default {}), configurationItems (array, default
//     []). Unknown keys are ignored. An optional field of the wrong type makes the entry invalid.
//   - id = name_version with every "." replaced by "_".
//   - command is resolved against the root (relative, or absolute as is), cleaned, and must stay inside the
//     root ("../../bin/sh" and "/bin/sh" are refused: the whole entry is skipped). It is kept absolute. A
//     command that does not exist or is not executable only gets a warning (it fails when run).
//   - An entry with neither command nor dockerImage cannot run and is skipped. Which of the rest can run
//     depends on the enabled runners (job.runner): the caller filters.
//   - Configuration items: name (non-blank string), description (string), type (string, text, number,
//     boolean), multi and required (booleans, default false), defaultValue (any JSON). Deviation: an invalid
//     item is skipped alone, with a warning, where the reference empties the whole list; the reference's way
//     would silently drop, e.g., the required API key item and leave the analyzer unconfigurable. A repeated
//     item name keeps the first.
//   - Duplicate ids (same kind): the first one read wins (paths in the given order), with a warning.
//
// Nothing here fails the service's start because of one bad definition: invalid entries, unparsable or
// unreadable files are skipped with a warning. Load returns an error only for a configured path that exists
// but cannot be read at all (permission, I/O error, not a file or directory): an operator mistake that would
// otherwise hide every definition under it. A configured path that does not exist is only a warning (a
// volume not mounted yet; the next scan finds it). Even with an error, Load returns every definition it read.
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// maxFileSize bounds one definition file (the full public catalog is under 1 MiB).
const maxFileSize = 32 << 20

// Load reads the definitions found in paths, all of kind. See the package comment.
func Load(paths []string, kind analysis.Kind, log *slog.Logger) ([]analysis.Definition, error) {
	l := newLoader(kind, log)
	var errs []error
	for _, p := range paths {
		if err := l.path(p); err != nil {
			errs = append(errs, err)
		}
	}
	return l.defs, errors.Join(errs...)
}

type loader struct {
	kind    analysis.Kind
	log     *slog.Logger
	defs    []analysis.Definition
	seen    map[string]string // id → file it came from
	refused []analysis.RefusedDefinition
	missing string // why the last path read found nothing (does not exist, URL…), for its warning
	root    string // the real (symlinks resolved) root of the last path read
}

// inside reports whether path p is root or under it (both cleaned, symlinks resolved).
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func newLoader(kind analysis.Kind, log *slog.Logger) *loader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &loader{kind: kind, log: log.With("kind", string(kind)), seen: map[string]string{}}
}

// refuse records a refused file or entry (the caller logs it).
func (l *loader) refuse(file, id, reason string) {
	l.refused = append(l.refused, analysis.RefusedDefinition{File: file, Definition: id, Reason: reason})
}

func (l *loader) path(p string) error {
	p = strings.TrimSpace(p)
	if p == "" {
		return nil
	}
	if u, err := url.Parse(p); err == nil && u.Scheme != "" && len(u.Scheme) > 1 { // len: not a Windows drive
		switch u.Scheme {
		case "file":
			p = u.Path
		default:
			l.log.Warn("definition catalog URLs are not fetched; download the catalog and configure its file", "path", p)
			l.missing = "catalog URLs are not fetched: download the catalog and configure its file"
			return nil
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("definition path %s: %w", p, err)
	}
	st, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		l.log.Warn("definition path does not exist", "path", abs)
		l.missing = "does not exist"
		return nil
	}
	if err != nil {
		return fmt.Errorf("definition path %s: %w", abs, err)
	}
	// The configured path may itself be a link; what it reads is confined to where it leads.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("definition path %s: %w", abs, err)
	}
	switch {
	case st.Mode().IsRegular():
		l.root = filepath.Dir(filepath.Dir(real))
		if err := l.file(real, l.root); err != nil {
			return fmt.Errorf("definition file %s: %w", abs, err)
		}
		return nil
	case st.IsDir():
		l.root = real
		return l.root_(real)
	default:
		return fmt.Errorf("definition path %s is neither a file nor a directory", abs)
	}
}

// root_ reads <root>/<sub>/*.json, root a real path: a worker folder or file that is a link out of the root
// is refused, not followed.
func (l *loader) root_(root string) error {
	subs, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("definition path %s: %w", root, err)
	}
	for _, sub := range subs { // ReadDir sorts by name
		dir := filepath.Join(root, sub.Name())
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		if real, err := filepath.EvalSymlinks(dir); err != nil || !inside(root, real) {
			l.log.Warn("worker folder refused: a link out of the definitions root", "path", dir)
			l.refuse(dir, "", "the worker folder is a link out of the definitions root")
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			l.log.Warn("cannot read a worker folder", "path", dir, "err", err)
			l.refuse(dir, "", "cannot read the worker folder: "+err.Error())
			continue
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			file := filepath.Join(dir, e.Name())
			if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() {
				continue
			}
			if real, err := filepath.EvalSymlinks(file); err != nil || !inside(root, real) {
				l.log.Warn("definition file refused: a link out of the definitions root", "path", file)
				l.refuse(file, "", "the file is a link out of the definitions root")
				continue
			}
			if err := l.file(file, root); err != nil {
				l.log.Warn("definition file skipped", "path", file, "err", err)
				l.refuse(file, "", "cannot read the file: "+err.Error())
			}
		}
	}
	return nil
}

// file reads one definition file. Its error means the file could not be read; parse problems are warnings.
func (l *loader) file(file, root string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	f.Close()
	if err != nil {
		return err
	}
	if len(data) > maxFileSize {
		l.log.Warn("definition file skipped: too large", "path", file, "limit", maxFileSize)
		l.refuse(file, "", fmt.Sprintf("larger than %d bytes", maxFileSize))
		return nil
	}
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		l.log.Warn("definition file skipped: invalid JSON", "path", file, "err", err)
		l.refuse(file, "", "invalid JSON: "+err.Error())
		return nil
	}
	var entries []json.RawMessage
	switch t := bytes.TrimSpace(raw); {
	case len(t) > 0 && t[0] == '[':
		if err := json.Unmarshal(t, &entries); err != nil {
			l.log.Warn("definition file skipped: invalid JSON", "path", file, "err", err)
			l.refuse(file, "", "invalid JSON: "+err.Error())
			return nil
		}
	case len(t) > 0 && t[0] == '{':
		entries = []json.RawMessage{t}
	default:
		l.log.Warn("definition file skipped: neither an object nor an array", "path", file)
		l.refuse(file, "", "neither a definition object nor an array of them")
		return nil
	}
	for i, e := range entries {
		def, err := l.definition(e, root, file)
		if err != nil {
			l.log.Warn("definition skipped", "path", file, "index", i, "err", err)
			reason := err.Error()
			if len(entries) > 1 {
				reason = fmt.Sprintf("entry %d: %s", i, reason)
			}
			l.refuse(file, def.ID, reason)
			continue
		}
		if first, dup := l.seen[def.ID]; dup {
			l.log.Warn("duplicate definition id; the first one is kept", "definition", def.ID, "path", file, "first", first)
			l.refuse(file, def.ID, "duplicate id: the definition of "+first+" is kept")
			continue
		}
		l.seen[def.ID] = file
		def.Source = file
		l.defs = append(l.defs, def)
	}
	return nil
}

var validTypes = map[string]bool{"string": true, "text": true, "number": true, "boolean": true}

func (l *loader) definition(data json.RawMessage, root, file string) (analysis.Definition, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return analysis.Definition{}, errors.New("not an object")
	}
	d := analysis.Definition{Kind: l.kind, DataTypeList: []string{}, ConfigurationItems: []analysis.ConfigItem{},
		Config: map[string]any{}}
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &d.Name}, {"version", &d.Version}, {"description", &d.Description}, {"author", &d.Author},
		{"url", &d.URL}, {"license", &d.License}} {
		ok, err := field(m, f.key, f.dst)
		if err != nil {
			return d, err
		}
		if !ok {
			return d, fmt.Errorf("missing %s", f.key)
		}
	}
	if strings.TrimSpace(d.Name) == "" || strings.TrimSpace(d.Version) == "" {
		return d, errors.New("blank name or version")
	}
	d.ID = strings.ReplaceAll(d.Name+"_"+d.Version, ".", "_")
	if i := strings.IndexFunc(d.ID, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`/\?#%`, r)
	}); i >= 0 {
		return d, fmt.Errorf("id %q has a character not allowed in an id", d.ID)
	}
	if _, err := field(m, "dataTypeList", &d.DataTypeList); err != nil {
		return d, err
	}
	if d.DataTypeList == nil {
		d.DataTypeList = []string{}
	}
	var command string
	if _, err := field(m, "command", &command); err != nil {
		return d, err
	}
	if _, err := field(m, "dockerImage", &d.DockerImage); err != nil {
		return d, err
	}
	if _, err := field(m, "baseConfig", &d.BaseConfig); err != nil {
		return d, err
	}
	if strings.TrimSpace(d.BaseConfig) == "" {
		d.BaseConfig = d.Name
	}
	if _, err := field(m, "config", &d.Config); err != nil {
		return d, err
	}
	if d.Config == nil {
		d.Config = map[string]any{}
	}
	d.ConfigurationItems = l.items(m["configurationItems"], d.ID, file)

	d.DockerImage = strings.TrimSpace(d.DockerImage)
	if command = strings.TrimSpace(command); command != "" {
		abs, err := resolve(root, command, l.kind)
		if err != nil {
			return d, err
		}
		d.Command = abs
		if st, err := os.Stat(abs); err != nil {
			l.log.Warn("definition command not found", "definition", d.ID, "command", abs, "path", file)
		} else if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			l.log.Warn("definition command is not an executable file", "definition", d.ID, "command", abs, "path", file)
		}
	}
	if d.Command == "" && d.DockerImage == "" {
		return d, errors.New("neither command nor dockerImage: nothing to run")
	}
	return d, nil
}

// resolve makes command absolute against root and refuses a path outside root.
func resolve(root, command string, kind analysis.Kind) (string, error) {
	abs := filepath.Clean(command)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, command)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("command %q is outside the %ss root", command, kind)
	}
	// A command that exists is run as the real file it names, which must be in the root too: a link inside the
	// root to a program outside it is refused.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		if !inside(root, real) || real == root {
			return "", fmt.Errorf("command %q is a link out of the %ss root", command, kind)
		}
		abs = real
	}
	return abs, nil
}

// items reads configurationItems, skipping invalid items.
func (l *loader) items(raw json.RawMessage, id, file string) []analysis.ConfigItem {
	out := []analysis.ConfigItem{}
	if len(raw) == 0 || string(raw) == "null" {
		return out
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		l.log.Warn("configurationItems is not an array; the definition gets none", "definition", id, "path", file)
		return out
	}
	names := map[string]bool{}
	for i, r := range list {
		it, err := item(r)
		if err == nil && names[it.Name] {
			err = fmt.Errorf("item %q repeated", it.Name)
		}
		if err != nil {
			l.log.Warn("configuration item skipped", "definition", id, "path", file, "index", i, "err", err)
			continue
		}
		names[it.Name] = true
		out = append(out, it)
	}
	return out
}

func item(raw json.RawMessage) (analysis.ConfigItem, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return analysis.ConfigItem{}, errors.New("not an object")
	}
	var it analysis.ConfigItem
	if ok, err := field(m, "name", &it.Name); err != nil || !ok || strings.TrimSpace(it.Name) == "" {
		return it, errors.New("missing or invalid name")
	}
	if ok, err := field(m, "description", &it.Description); err != nil || !ok {
		return it, errors.New("missing or invalid description")
	}
	if ok, err := field(m, "type", &it.Type); err != nil || !ok || !validTypes[it.Type] {
		return it, fmt.Errorf("invalid type %s (string, text, number or boolean)", m["type"])
	}
	if _, err := field(m, "multi", &it.Multi); err != nil {
		return it, err
	}
	if _, err := field(m, "required", &it.Required); err != nil {
		return it, err
	}
	if _, err := field(m, "defaultValue", &it.DefaultValue); err != nil {
		return it, err
	}
	if _, err := field(m, "secret", &it.Secret); err != nil {
		return it, err
	}
	return it, nil
}

// field decodes m[key] into dst, numbers in free-form values as json.Number. Absent or null: false, nil (dst
// untouched). A value of the wrong type is an
// error naming key.
func field[T any](m map[string]json.RawMessage, key string, dst *T) (bool, error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw)) // numbers (defaultValue, config) as written: 0.0 stays 0.0
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return false, fmt.Errorf("%s has the wrong type (%s)", key, te.Value)
		}
		return false, fmt.Errorf("%s: %w", key, err)
	}
	return true, nil
}
