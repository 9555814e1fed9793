package linefile_test

import (
	"bufio"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/linefile"
)

func TestRead(t *testing.T) {
	var got []string
	err := linefile.Read(strings.NewReader("# a comment\n\n  a b#c\n\t \nd   e # f\ng"), func(n int, fields []string) error {
		got = append(got, strings.Join(fields, ",")+"@"+string(rune('0'+n)))
		return nil
	})
	if want := []string{"a,b@3", "d,e@5", "g@6"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Read: %q, %v; want %q", got, err, want)
	}
}

func TestReadStopsAtTheFirstError(t *testing.T) {
	bad := errors.New("bad")
	calls := 0
	err := linefile.Read(strings.NewReader("a\n\nb\nc"), func(n int, fields []string) error {
		calls++
		if fields[0] == "b" {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) || err.Error() != "line 3: bad" || calls != 2 {
		t.Errorf("Read: %v after %d calls; want line 3: bad after 2", err, calls)
	}
}

func TestReadTooLongALine(t *testing.T) {
	err := linefile.Read(strings.NewReader("a\n"+strings.Repeat("x", bufio.MaxScanTokenSize+1)), func(int, []string) error { return nil })
	if !errors.Is(err, bufio.ErrTooLong) || !strings.HasPrefix(err.Error(), "line 2: ") {
		t.Errorf("Read: %v; want line 2: %v", err, bufio.ErrTooLong)
	}
}
