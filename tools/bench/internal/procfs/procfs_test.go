package procfs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	line := "4242 (plant store) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 " +
		"517 89 0 0 20 0 12 0 998877 1234567 890 18446744073709551615\n"
	got, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if got.User != 517 || got.System != 89 || got.Total() != 606 {
		t.Errorf("ParseStat = %+v, want utime 517 stime 89", got)
	}
	if _, err := ParseStat([]byte("12 (x) S 1 2")); err == nil {
		t.Error("ParseStat of a truncated line: no error")
	}
	if _, err := ParseStat([]byte("garbage")); err == nil {
		t.Error("ParseStat without ')': no error")
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tplantstore\nVmPeak:\t 1300000 kB\nVmHWM:\t   24576 kB\nVmRSS:\t   20480 kB\nThreads:\t7\n"
	m, err := ParseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 20480*1024 || m.HWM != 24576*1024 {
		t.Errorf("ParseStatus = %+v", m)
	}
	if _, err := ParseStatus([]byte("Name:\tzombie\nState:\tZ (zombie)\n")); err == nil {
		t.Error("ParseStatus without VmRSS: no error")
	}
	if _, err := ParseStatus([]byte("VmHWM:\t1 kB\nVmRSS:\tlots\n")); err == nil {
		t.Error("ParseStatus with a bad number: no error")
	}
}

func TestReadSelf(t *testing.T) {
	pid := os.Getpid()
	if _, err := ReadCPU(pid); err != nil {
		t.Errorf("ReadCPU(self): %v", err)
	}
	m, err := ReadMemory(pid)
	if err != nil {
		t.Fatalf("ReadMemory(self): %v", err)
	}
	if m.RSS == 0 || m.HWM < m.RSS {
		t.Errorf("ReadMemory(self) = %+v: want 0 < RSS <= HWM", m)
	}
	if hz := ClockTicks(); hz <= 0 {
		t.Errorf("ClockTicks = %v", hz)
	}
}

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t: fpu\n"
	if got := CPUModel([]byte(info)); got != "Intel(R) Xeon(R) CPU @ 2.20GHz" {
		t.Errorf("CPUModel = %q", got)
	}
	if got := CPUModel(nil); got != "unknown" {
		t.Errorf("CPUModel(nil) = %q", got)
	}
}
