package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The user documentation must work in a clone: every relative link in README.md, */README.md and docs/**/*.md
// names a file of the repository (and, for a Markdown file, a heading when the link has an #anchor), and no
// document points outside the repository (the ../shared/ folder the project was specified from, its
// DECISIONS.md and STYLE.md).
func TestDocumentationLinks(t *testing.T) {
	docs, err := markdownDocs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README.md", "case-svc/README.md", "deploy/README.md", "docs/decisions.md",
		"docs/api/analysis-api.md", "docs/api/case-api.md"} {
		if !slices.Contains(docs, want) {
			t.Errorf("%s is not among the checked documents %v", want, docs)
		}
	}
	problems, links := checkLinks("..", docs)
	for _, p := range problems {
		t.Error(p)
	}
	if links < 20 {
		t.Errorf("only %d relative links found in %v: is the link pattern broken?", links, docs)
	}
}

// The checker itself: a missing file, a missing heading and a link out of the repository are reported; good
// links, external links, and links in code are not.
func TestCheckLinksFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n## Set up `make run`, again!\n\n"+
		"[ok](docs/a.md) [ok](docs/a.md#the-first-one) [ok](#set-up-make-run-again) [ok](https://example.com/x)\n"+
		"[gone](docs/missing.md) [bad anchor](docs/a.md#nope) ![img](docs/pic.png)\n"+
		"`[code](docs/not-checked.md)`\n```\n[fenced](docs/not-checked.md)\n```\n"+
		"[ref]: docs/also-missing.md\n")
	write("docs/a.md", "# The first one\n\n[up](../README.md#top) [out](../../shared/DECISIONS.md)\n"+
		"See `../shared/STYLE.md`.\nAs DECISIONS.md says.\n")
	write("docs/pic.png", "")
	docs, err := markdownDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(docs, []string{"README.md", "docs/a.md"}) {
		t.Fatalf("documents %v", docs)
	}
	problems, links := checkLinks(root, docs)
	got := strings.Join(problems, "\n")
	for _, want := range []string{"docs/missing.md", "docs/a.md#nope", "docs/also-missing.md",
		"../../shared/DECISIONS.md: outside", "See `../shared/STYLE.md`", "As DECISIONS.md says"} {
		if !strings.Contains(got, want) {
			t.Errorf("not reported: %s\n%s", want, got)
		}
	}
	if len(problems) != 6 || strings.Contains(got, "not-checked") || links != 9 {
		t.Errorf("%d links, problems:\n%s", links, got)
	}
}

// markdownDocs lists README.md, */README.md and docs/**/*.md under root, slash-separated and relative to it.
func markdownDocs(root string) ([]string, error) {
	docs := []string{"README.md"}
	top, err := filepath.Glob(filepath.Join(root, "*", "README.md"))
	if err != nil {
		return nil, err
	}
	for _, p := range top {
		rel, _ := filepath.Rel(root, p)
		docs = append(docs, filepath.ToSlash(rel))
	}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(docs[1:])
	return slices.Compact(docs), err
}

var (
	fence      = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```[^\n]*$")
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	inlineLink = regexp.MustCompile(`!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	external   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	outside    = regexp.MustCompile(`\.\./shared/|\bDECISIONS\.md|\bSTYLE\.md`) // the specification's files
)

// checkLinks returns one line per broken link of docs (files under root) and the number of relative links.
func checkLinks(root string, docs []string) (problems []string, links int) {
	anchors := map[string]map[string]bool{} // file → its heading anchors
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		if b, err := os.ReadFile(file); err == nil {
			seen := map[string]int{}
			for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
				s := slug(m[1])
				if n := seen[s]; n > 0 {
					a[s+"-"+strconv.Itoa(n)] = true
				} else {
					a[s] = true
				}
				seen[s]++
			}
		}
		anchors[file] = a
		return a
	}
	for _, doc := range docs {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		text := codeSpan.ReplaceAllString(fence.ReplaceAllString(string(b), ""), "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range refLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if external.MatchString(target) {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			file := filepath.Join(root, doc) // a bare #anchor is in the document itself
			if path != "" {
				file = filepath.Join(root, filepath.Dir(doc), filepath.FromSlash(path))
			}
			if rel, err := filepath.Rel(root, file); err != nil || strings.HasPrefix(rel, "..") {
				problems = append(problems, doc+": "+target+": outside the repository")
				continue
			}
			if _, err := os.Stat(file); err != nil {
				problems = append(problems, doc+": "+target+": no such file")
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[anchor] {
				problems = append(problems, doc+": "+target+": no heading with this anchor")
			}
		}
		// Other mentions of the folder the project was specified from, e.g. `../shared/spec/…` in a code span
		// (the links were checked above).
		rest := refLink.ReplaceAllString(inlineLink.ReplaceAllString(string(b), ""), "")
		for _, line := range strings.Split(rest, "\n") {
			if outside.MatchString(line) {
				problems = append(problems, doc+": names a file outside the repository: "+strings.TrimSpace(line))
			}
		}
	}
	return problems, links
}

// slug is GitHub's anchor for a heading: lower case, formatting and punctuation dropped (letters, digits,
// spaces, '-' and '_' kept), spaces turned into '-'.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1") // a link: its text
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
