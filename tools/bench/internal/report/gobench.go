package report

import (
	"bufio"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParseGoBench parses the result lines of `go test -bench -benchmem`
// ("BenchmarkX/sub-2  20000  51234 ns/op  2345 B/op  31 allocs/op"). The
// GOMAXPROCS suffix is dropped from the names.
func ParseGoBench(out string) []Bench {
	var res []Bench
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		b := Bench{Name: trimProcs(strings.TrimPrefix(f[0], "Benchmark")), Iterations: n}
		ok := false
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			switch f[i+1] {
			case "ns/op":
				b.NsPerOp, ok = v, true
			case "B/op":
				b.BytesPerOp = v
			case "allocs/op":
				b.AllocsPerOp = v
			}
		}
		if ok {
			res = append(res, b)
		}
	}
	return res
}

func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// failures describes a phase's failed requests: bad answers other than 200
// by status, requests without an answer, and the first error.
func failures(statuses map[int]int64, bad, errs int64, first string) string {
	codes := make([]int, 0, len(statuses))
	for c := range statuses {
		if c != 200 {
			codes = append(codes, c)
		}
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", statuses[c], c))
	}
	s := fmt.Sprintf("%d answers other than 200 (%s), %d requests without an answer", bad, strings.Join(parts, ", "), errs)
	if first != "" {
		s += " (first error: " + first + ")"
	}
	return s
}
