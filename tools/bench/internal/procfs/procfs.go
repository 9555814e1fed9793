// Package procfs reads the CPU time and resident memory of a process from
// Linux's /proc, and the facts about the machine the report records.
package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// CPUTicks is a process's user and system CPU time in clock ticks.
type CPUTicks struct{ User, System uint64 }

// Total is user plus system time, in ticks.
func (c CPUTicks) Total() uint64 { return c.User + c.System }

// ParseStat parses the contents of /proc/<pid>/stat. The command name, field
// 2, is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')': utime and stime are fields 14 and 15.
func ParseStat(data []byte) (CPUTicks, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return CPUTicks{}, fmt.Errorf("stat: no ')' closing the command name")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return CPUTicks{}, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	u, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return CPUTicks{}, fmt.Errorf("stat: utime %q: %w", f[11], err)
	}
	s, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return CPUTicks{}, fmt.Errorf("stat: stime %q: %w", f[12], err)
	}
	return CPUTicks{User: u, System: s}, nil
}

// Memory is what /proc/<pid>/status says of resident memory, in bytes.
type Memory struct {
	RSS, HWM uint64 // VmRSS now, VmHWM the peak since exec
}

// ParseStatus parses VmRSS and VmHWM (given in kB) from /proc/<pid>/status.
func ParseStatus(data []byte) (Memory, error) {
	var m Memory
	var seenRSS, seenHWM bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return Memory{}, fmt.Errorf("status: %s %q: want '<n> kB'", key, strings.TrimSpace(val))
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("status: %s: %w", key, err)
		}
		if key == "VmRSS" {
			m.RSS, seenRSS = n*1024, true
		} else {
			m.HWM, seenHWM = n*1024, true
		}
	}
	if !seenRSS || !seenHWM {
		return Memory{}, fmt.Errorf("status: no VmRSS/VmHWM (a zombie, or not Linux?)")
	}
	return m, nil
}

// ReadCPU reads the CPU ticks of pid.
func ReadCPU(pid int) (CPUTicks, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return CPUTicks{}, err
	}
	return ParseStat(b)
}

// ReadMemory reads the resident memory of pid.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Memory{}, err
	}
	return ParseStatus(b)
}

// ClockTicks is the number of clock ticks a second (getconf CLK_TCK), or
// 100, Linux's USER_HZ everywhere that matters, when getconf is missing.
func ClockTicks() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
}

// CPUModel returns the first "model name" of /proc/cpuinfo's contents.
func CPUModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(val)
		}
	}
	return "unknown"
}

// LoadAverage returns the first three fields of /proc/loadavg.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
