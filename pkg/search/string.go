package search

import "strings"

// term is one field:value term of a _string query.
type term struct {
	field, value string
}

// strToken is a term or, when keyword is set, the keyword AND or OR.
type strToken struct {
	keyword string // "AND", "OR" or "" for a term
	term    term
}

// str parses the _string query s: field:value terms joined by AND and OR, AND binding tighter.
func (p *parser) str(s string) (Node, error) {
	toks, err := lexString(s)
	if err != nil {
		return Node{}, err
	}
	if len(toks) == 0 {
		return p.leaf(Node{Op: OpAll})
	}
	// groups are the OR-ed groups of AND-ed terms.
	var groups [][]term
	var cur []term
	for i, t := range toks {
		if i%2 == 0 {
			if t.keyword != "" {
				return Node{}, bad("_string: unexpected %s, expected a field:value term", t.keyword)
			}
			cur = append(cur, t.term)
			continue
		}
		switch t.keyword {
		case "AND":
		case "OR":
			groups = append(groups, cur)
			cur = nil
		default:
			return Node{}, bad("_string: terms must be joined by AND or OR, before %s", quote(t.term.field+":"+t.term.value))
		}
	}
	if len(toks)%2 == 0 {
		return Node{}, bad("_string: %s at the end of the query", toks[len(toks)-1].keyword)
	}
	groups = append(groups, cur)

	or := Node{Op: OpOr}
	for _, g := range groups {
		and := Node{Op: OpAnd}
		for _, t := range g {
			c, err := p.eq(t.field, t.value)
			if err != nil {
				return Node{}, err
			}
			and.Children = append(and.Children, c)
		}
		if len(and.Children) == 1 {
			or.Children = append(or.Children, and.Children[0])
			continue
		}
		if err := p.count(); err != nil {
			return Node{}, err
		}
		or.Children = append(or.Children, and)
	}
	if len(or.Children) == 1 {
		return or.Children[0], nil
	}
	return p.leaf(or)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// lexString splits a _string query into terms and keywords.
func lexString(s string) ([]strToken, error) {
	var toks []strToken
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return toks, nil
		}
		if len(toks) > MaxNodes {
			return nil, bad("_string: query is too large (more than %d terms)", MaxNodes)
		}
		start := i
		for i < len(s) && !isSpace(s[i]) && s[i] != ':' && s[i] != '"' {
			i++
		}
		word := s[start:i]
		if strings.ContainsAny(word, "()") {
			return nil, bad("_string: parentheses are not supported")
		}
		if i == len(s) || isSpace(s[i]) {
			if kw := strings.ToUpper(word); kw == "AND" || kw == "OR" {
				toks = append(toks, strToken{keyword: kw})
				continue
			}
			return nil, bad("_string: %s is not a field:value term", quote(word))
		}
		if s[i] == '"' {
			return nil, bad("_string: expected field:value, got a quote after %s", quote(word))
		}
		// s[i] == ':'
		if word == "" {
			return nil, bad("_string: missing field name before ':'")
		}
		if strings.ContainsAny(word, "*?") {
			return nil, bad("_string: wildcards are not supported in field names (%s)", quote(word))
		}
		i++
		var value string
		if i < len(s) && s[i] == '"' {
			v, next, err := quoted(s, i)
			if err != nil {
				return nil, err
			}
			value, i = v, next
			if i < len(s) && !isSpace(s[i]) {
				return nil, bad("_string: expected a space after the quoted value of %s", quote(word))
			}
		} else {
			start := i
			for i < len(s) && !isSpace(s[i]) {
				i++
			}
			value = s[start:i]
			if value == "" {
				return nil, bad("_string: missing value for field %s", quote(word))
			}
			if strings.ContainsAny(value, "()") {
				return nil, bad("_string: parentheses are not supported")
			}
			if strings.ContainsAny(value, `*?~^[]{}"\`) {
				return nil, bad("_string: unsupported character in value %s (ranges, wildcards and escapes are not supported; double-quote the value to match it literally)", quote(value))
			}
		}
		toks = append(toks, strToken{term: term{field: word, value: value}})
	}
}

// quoted reads the double-quoted string starting at s[i] == '"', returning its unescaped contents and the index
// just past the closing quote. A backslash escapes the character after it.
func quoted(s string, i int) (string, int, error) {
	var b strings.Builder
	for i++; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			i++
			if i == len(s) {
				return "", 0, bad("_string: unterminated quoted value")
			}
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, bad("_string: unterminated quoted value")
}
