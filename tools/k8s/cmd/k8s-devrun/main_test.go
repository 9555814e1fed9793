package main

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func tarOf(t *testing.T, name, content string) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

// The sync's tar replaces a file by renaming a new one over it: a reader of
// the old one (the running binary) keeps it whole.
func TestUntarReplacesByRename(t *testing.T) {
	dir := t.TempDir()
	args := []string{"xmf", "-", "-C", dir, "--no-same-owner"}
	if err := untar(args, tarOf(t, "/dev-sync/plantstore", "one")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dev-sync", "plantstore")
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := untar(args, tarOf(t, "/dev-sync/plantstore", "two")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	o := make([]byte, 3)
	_, _ = old.Read(o)
	if string(b) != "two" || string(o) != "one" {
		t.Fatalf("new file %q, the old one read through its open descriptor %q", b, o)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
	left, _ := filepath.Glob(filepath.Join(dir, "dev-sync", ".*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := untar([]string{"czf", "x"}, tarOf(t, "a", "b")); err == nil {
		t.Fatal("an unsupported form was accepted")
	}
}

// supervise restarts the service when a new binary is synced, and exits as
// the service does on SIGTERM.
func TestSuperviseRestartsOnNewBinary(t *testing.T) {
	if os.Getenv("DEVRUN_HELPER") == "1" {
		os.Exit(supervise([]string{"hello"}))
	}
	dir := t.TempDir()
	script := func(word string) string {
		return "#!/bin/sh\necho " + word + " \"$@\"\ntrap 'exit 7' TERM\nwhile :; do sleep 0.05; done\n"
	}
	baked := filepath.Join(dir, "baked")
	if err := os.WriteFile(baked, []byte(script("baked")), 0o755); err != nil {
		t.Fatal(err)
	}
	synced := filepath.Join(dir, "sync", "plantstore")
	if err := os.Mkdir(filepath.Dir(synced), 0o755); err != nil {
		t.Fatal(err)
	}
	// The child writes to a file, which the test reads as it grows.
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	output := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	cmd := exec.Command(os.Args[0], "-test.run=^TestSuperviseRestartsOnNewBinary$")
	cmd.Env = append(os.Environ(), "DEVRUN_HELPER=1", "DEVRUN_BINARY="+baked, "DEVRUN_SYNCED="+synced, "DEVRUN_STOP_TIMEOUT=2s")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(s string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(output(), s) {
				return
			}
		}
		t.Fatalf("no %q in:\n%s", s, output())
	}
	waitFor("baked hello")
	if err := untar([]string{"xmf", "-", "-C", "/"}, tarOf(t, synced, script("synced"))); err != nil {
		t.Fatal(err)
	}
	waitFor("synced hello")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("exit: %v (want the service's 7)\n%s", err, output())
	}
}
