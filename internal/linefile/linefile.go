// Package linefile reads the service's line files (API keys and JWT
// identities, webhook subscribers, JWT issuers): one entry a line, its fields
// separated by white space; "#" starts a comment that runs to the line's
// end, and lines without fields are skipped.
package linefile

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Fields are the fields of one line, its comment cut off.
func Fields(line string) []string {
	line, _, _ = strings.Cut(line, "#")
	return strings.Fields(line)
}

// Read calls entry with the number (from 1) and the fields of each line of r
// that has any. It stops at the first error, of entry or of reading, and
// returns it as "line N: …".
func Read(r io.Reader, entry func(n int, fields []string) error) error {
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		if fields := Fields(sc.Text()); len(fields) > 0 {
			if err := entry(n, fields); err != nil {
				return fmt.Errorf("line %d: %w", n, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}
