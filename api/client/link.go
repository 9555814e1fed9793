package client

import (
	"errors"
	"fmt"
	"strings"
)

// nextLink returns the target of the first link with relation type "next"
// in Link header values (RFC 8288 section 3): a comma-separated list of
// `<URI-Reference> *( ";" link-param )`, where a parameter's value is a
// token or a quoted string and rel holds space-separated relation types,
// compared case-insensitively. Commas and semicolons inside <...> and inside
// quoted strings are part of them. ok is false when no link is "next".
func nextLink(values []string) (target string, ok bool, err error) {
	for _, v := range values {
		links, err := parseLinks(v)
		if err != nil {
			return "", false, err
		}
		for _, l := range links {
			for _, rel := range strings.Fields(l.params["rel"]) {
				if strings.EqualFold(rel, "next") {
					return l.target, true, nil
				}
			}
		}
	}
	return "", false, nil
}

type link struct {
	target string
	params map[string]string // names lower-cased; the first of a repeated name counts (RFC 8288: rel MUST NOT repeat)
}

func parseLinks(s string) ([]link, error) {
	var links []link
	p := linkParser{s: s}
	for {
		p.skipSpace()
		if p.done() {
			return links, nil
		}
		if p.peek() == ',' { // empty list elements are allowed (RFC 9110 section 5.6.1)
			p.i++
			continue
		}
		l, err := p.link()
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		links = append(links, l)
		p.skipSpace()
		if !p.done() {
			if p.peek() != ',' {
				return nil, fmt.Errorf("%q: want ',' at offset %d", s, p.i)
			}
			p.i++
		}
	}
}

type linkParser struct {
	s string
	i int
}

func (p *linkParser) done() bool { return p.i >= len(p.s) }
func (p *linkParser) peek() byte { return p.s[p.i] }

func (p *linkParser) skipSpace() {
	for !p.done() && (p.peek() == ' ' || p.peek() == '\t') {
		p.i++
	}
}

func (p *linkParser) link() (link, error) {
	if p.peek() != '<' {
		return link{}, fmt.Errorf("want '<' at offset %d", p.i)
	}
	end := strings.IndexByte(p.s[p.i:], '>')
	if end < 0 {
		return link{}, errors.New("unterminated '<'")
	}
	l := link{target: strings.TrimSpace(p.s[p.i+1 : p.i+end]), params: map[string]string{}}
	p.i += end + 1
	for {
		p.skipSpace()
		if p.done() || p.peek() == ',' {
			return l, nil
		}
		if p.peek() != ';' {
			return link{}, fmt.Errorf("want ';' or ',' at offset %d", p.i)
		}
		p.i++
		p.skipSpace()
		name := p.token()
		if name == "" {
			if p.done() || p.peek() == ';' || p.peek() == ',' {
				continue // an empty parameter: "; ;"
			}
			return link{}, fmt.Errorf("want a parameter name at offset %d", p.i)
		}
		p.skipSpace()
		var value string
		if !p.done() && p.peek() == '=' {
			p.i++
			p.skipSpace()
			var err error
			if value, err = p.value(); err != nil {
				return link{}, err
			}
		}
		name = strings.ToLower(name)
		if _, seen := l.params[name]; !seen {
			l.params[name] = value
		}
	}
}

// token reads an RFC 9110 token (tchar+).
func (p *linkParser) token() string {
	start := p.i
	for !p.done() && isTChar(p.peek()) {
		p.i++
	}
	return p.s[start:p.i]
}

// value reads a token or a quoted string (with its backslash escapes).
func (p *linkParser) value() (string, error) {
	if p.done() || p.peek() != '"' {
		return p.token(), nil
	}
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.peek()
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if p.done() {
				return "", errors.New("unterminated quoted string")
			}
			c = p.peek()
			p.i++
		}
		b.WriteByte(c)
	}
	return "", errors.New("unterminated quoted string")
}

func isTChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
