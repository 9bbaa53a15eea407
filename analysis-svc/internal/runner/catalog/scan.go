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
	for i, p := range paths {
		before, refusedBefore := len(l.defs), len(l.refused)
		l.missing, l.root = "", ""
		err := l.path(p)
		if err != nil {
			l.log.Warn("definition path unreadable", "path", p, "err", err)
			l.refuse(p, "", err.Error())
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
			kept++
		}
		relativeRefusals(l, refusedBefore, len(l.refused), p, fmt.Sprintf("%s[%d]", setting, i))
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
			msg = hint(p, kind)
		}
		res.Warnings = append(res.Warnings, analysis.PathWarning{Setting: setting, Index: i, Path: p, Message: msg})
	}
	res.Refused = l.refused
	return res
}

// hint explains why the existing path p (of analyzer.paths or responder.paths, as kind) holds no
// definition, and what to configure instead.
func hint(p string, kind analysis.Kind) string {
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
			"above it, %s", filepath.Base(direct[0]), kind, filepath.Dir(abs))
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

// relativeRefusals rewrites the paths of refusals [from, to) (their file and their reason) relative to the
// configured path p, named by its setting (analyzer.paths[0]/Sub/flavor.json): the scan's answer goes to
// org-admins, who need not learn the server's layout. The log has the absolute paths.
func relativeRefusals(l *loader, from, to int, p, name string) {
	var bases []string
	if l.root != "" {
		bases = append(bases, l.root)
	}
	if abs, err := filepath.Abs(strings.TrimSpace(p)); err == nil {
		bases = append(bases, abs)
	}
	rel := func(s string) string {
		for _, b := range bases {
			s = strings.ReplaceAll(s, b+string(filepath.Separator), name+"/")
			s = strings.ReplaceAll(s, b, name)
		}
		return s
	}
	for i := from; i < to && i < len(l.refused); i++ {
		l.refused[i].File = rel(l.refused[i].File)
		l.refused[i].Reason = rel(l.refused[i].Reason)
	}
}
