package catalog

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// Runnable says why a definition cannot run on this server ("" when it can), e.g. its runner is not in
// job.runner.
type Runnable func(analysis.Definition) string

// Scan reads paths as Load does and also returns what it refused and which paths yield no definition:
//
//   - Refused: every file or entry that was skipped (invalid JSON, a missing field, a command outside the
//     root, a duplicate id…) and every definition runnable refuses, each with its file and the reason. Each
//     one is logged as a warning naming the file and the reason.
//   - Warnings: each entry of paths (the setting named setting, e.g. analyzer.paths) from which no
//     definition is kept, with what was found and a hint: the path does not exist, holds flavor files itself
//     (a worker folder: configure the folder above), has them one level deeper (configure that folder), or
//     every definition under it was refused.
func Scan(setting string, paths []string, kind analysis.Kind, runnable Runnable, log *slog.Logger) analysis.ScanResult {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := newLoader(kind, log)
	res := analysis.ScanResult{}
	var names names
	refusedBy := make([]string, 0, len(paths)) // the entry being scanned when each refusal was made
	keptBy := []string{}                       // same for res.Definitions
	for i, p := range paths {
		name := fmt.Sprintf("%s[%d]", setting, i)
		before, refusedBefore := len(l.defs), len(l.refused)
		l.missing, l.root = "", ""
		err := l.path(p)
		if err != nil {
			l.log.Warn("definition path unreadable", "path", p, "err", err)
			l.refuse(name, "", err.Error())
		}
		names.add(l.root, name)
		if abs, ok := configured(p); ok {
			names.add(abs, name)
		}
		kept := 0
		for _, d := range l.defs[before:] {
			if why := ""; runnable != nil {
				if why = runnable(d); why != "" {
					l.log.Warn("definition refused", "path", d.Source, "definition", d.ID, "err", why)
					l.refuse(d.Source, d.ID, why)
					continue
				}
			}
			res.Definitions = append(res.Definitions, d)
			keptBy = append(keptBy, name)
			kept++
		}
		for len(refusedBy) < len(l.refused) {
			refusedBy = append(refusedBy, name)
		}
		if kept > 0 || strings.TrimSpace(p) == "" {
			continue
		}
		msg := l.missing
		switch {
		case msg != "":
		case err != nil:
			msg = "cannot be read: " + err.Error()
		case len(l.refused) > refusedBefore:
			msg = fmt.Sprintf("every definition under it was refused (%d refusals)", len(l.refused)-refusedBefore)
		default:
			msg = hint(p, kind, name)
		}
		res.Warnings = append(res.Warnings, analysis.PathWarning{Setting: setting, Index: i, Path: p, Message: msg})
	}
	// The scan's answer goes to org-admins, who need not learn the server's layout: every path in it is named
	// relative to a configured path it is under (analyzer.paths[0]/Sub/flavor.json), the one being scanned
	// first, whichever path's refusal names it (a duplicate names the first file, maybe under another path).
	// The log has them whole.
	for i := range l.refused {
		l.refused[i].File, l.refused[i].Reason = names.rel(l.refused[i].File, refusedBy[i]), names.rel(l.refused[i].Reason, refusedBy[i])
	}
	for i, w := range res.Warnings {
		res.Warnings[i].Message = names.rel(w.Message, fmt.Sprintf("%s[%d]", setting, w.Index))
	}
	for i, d := range res.Definitions {
		res.Definitions[i].SourceName = names.rel(d.Source, keptBy[i])
	}
	res.Refused = l.refused
	return res
}

// configured is the absolute path a configured entry names (a file:// URL's path), as loader.path reads it.
func configured(p string) (string, bool) {
	p = strings.TrimSpace(p)
	if u, err := url.Parse(p); err == nil && u.Scheme != "" && len(u.Scheme) > 1 {
		if u.Scheme != "file" {
			return "", false
		}
		p = u.Path
	}
	if p == "" {
		return "", false
	}
	abs, err := filepath.Abs(p)
	return abs, err == nil
}

// names maps the configured paths (as written and with links resolved) to their setting's name.
type names []struct{ base, name string }

func (n *names) add(base, name string) {
	if base == "" || base == string(filepath.Separator) {
		return
	}
	*n = append(*n, struct{ base, name string }{filepath.Clean(base), name})
	// An entry as written and with its links resolved: the longer first (one may hold the other).
	if k := len(*n) - 1; k > 0 && (*n)[k-1].name == name && len((*n)[k-1].base) < len((*n)[k].base) {
		(*n)[k-1], (*n)[k] = (*n)[k], (*n)[k-1]
	}
}

// rel rewrites every path in s under a configured path as its name and the rest of the path: the paths of the
// entry prefer first (the one scanned), then the others in configuration order; a configured path only counts
// whole (root is not a prefix of root2).
func (n names) rel(s, prefer string) string {
	var first, rest names
	for _, b := range n {
		if b.name == prefer {
			first = append(first, b)
		} else {
			rest = append(rest, b)
		}
	}
	for _, b := range append(first, rest...) {
		var out strings.Builder
		for {
			i := strings.Index(s, b.base)
			if i < 0 {
				break
			}
			rest := s[i+len(b.base):]
			if rest != "" && rest[0] != filepath.Separator && isPathByte(rest[0]) {
				out.WriteString(s[:i+len(b.base)]) // a longer name that starts alike: not this path
				s = rest
				continue
			}
			out.WriteString(s[:i])
			out.WriteString(b.name)
			s = rest
		}
		out.WriteString(s)
		s = out.String()
	}
	return s
}

// isPathByte reports whether c can continue a file name (a path in a message ends at a space, quote, colon…).
func isPathByte(c byte) bool {
	return c == '.' || c == '-' || c == '_' || c == '~' || c == '+' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' ||
		c >= 'A' && c <= 'Z' || c >= 0x80
}

// hint explains why the existing path p (of analyzer.paths or responder.paths, as kind) holds no
// definition, and what to configure instead.
func hint(p string, kind analysis.Kind, name string) string {
	if u, err := url.Parse(p); err == nil && u.Scheme == "file" {
		p = u.Path
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "no definition found"
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "the file holds no definition"
	}
	if direct, _ := filepath.Glob(filepath.Join(abs, "*.json")); len(direct) > 0 {
		return fmt.Sprintf("it holds flavor files itself (%s): it is a worker folder; configure the %ss root "+
			"above it, %s/..", filepath.Base(direct[0]), kind, name)
	}
	subs, _ := os.ReadDir(abs)
	for _, s := range subs {
		deeper := filepath.Join(abs, s.Name())
		if m, _ := filepath.Glob(filepath.Join(deeper, "*", "*.json")); len(m) > 0 {
			return fmt.Sprintf("its definitions are one level deeper (%s): configure %s", strings.TrimPrefix(m[0], abs+"/"), deeper)
		}
	}
	return "no <worker folder>/<flavor>.json under it (layout: <root>/<Name>/<flavor>.json)"
}

// Scanner is the analysis.Scanner of analyzer.paths and responder.paths.
func Scanner(analyzerPaths, responderPaths []string, runnable Runnable, log *slog.Logger) analysis.Scanner {
	return func(kind analysis.Kind) analysis.ScanResult {
		if kind == analysis.KindResponder {
			return Scan("responder.paths", responderPaths, kind, runnable, log)
		}
		return Scan("analyzer.paths", analyzerPaths, kind, runnable, log)
	}
}
