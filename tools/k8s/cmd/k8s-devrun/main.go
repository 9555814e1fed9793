// Command k8s-devrun is PID 1 of plantstore's development image (never the
// release image; tools/k8s/skaffold-dev-build.sh builds it for skaffold.yaml):
// it runs the service and starts it again whenever skaffold's file sync
// replaces the service's binary, so that a saved Go change answers in the
// cluster without a new image, rollout or pod.
//
//	k8s-devrun [ARG...]    run the binary with ARGs (see below)
//	tar xmf - -C DIR ...   (invoked as tar) extract the archive skaffold's
//	                       sync sends (kubectl exec POD -- tar xmf - -C /
//	                       --no-same-owner), each file written beside its
//	                       destination and renamed over it, so that a
//	                       running binary is never written to and a reader
//	                       never sees half a file
//
// The binary run is $DEVRUN_SYNCED (default /dev-sync/plantstore, where the
// sync puts it: an emptyDir of the dev values) once it exists, else
// $DEVRUN_BINARY (default /plantstore, the one built into the image). When
// the directory of $DEVRUN_SYNCED is missing (the chart's hook Jobs, which do
// not mount it), k8s-devrun execs $DEVRUN_BINARY and is gone. Otherwise it
// watches $DEVRUN_SYNCED every 50ms; a new file stops the service (SIGTERM,
// SIGKILL after $DEVRUN_STOP_TIMEOUT, default 5s) and starts the new one. A
// service that exits by itself is started again at the next new binary (a
// crash of a bad edit leaves the pod running, waiting for the fix); SIGTERM
// and SIGINT are passed on, and k8s-devrun exits as the service did.
//
// With $DEVRUN_DLV_ADDR (for example :56268) the service runs under Delve
// (/dlv, in the image of the debug profile): dlv exec --headless
// --accept-multiclient --continue --listen=$DEVRUN_DLV_ADDR, which a DAP
// client attaches to (request attach, mode remote).
package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if filepath.Base(os.Args[0]) == "tar" {
		if err := untar(os.Args[1:], os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "tar:", err)
			os.Exit(2)
		}
		return
	}
	os.Exit(supervise(os.Args[1:]))
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "devrun: "+format+"\n", args...)
}

// fileID tells one version of a file from the next: the sync renames a new
// inode over the old one.
type fileID struct {
	ino, size int64
	mtime     time.Time
}

func stat(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return fileID{}, false
	}
	var ino int64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = int64(st.Ino)
	}
	return fileID{ino: ino, size: fi.Size(), mtime: fi.ModTime()}, true
}

func supervise(args []string) int {
	baked := env("DEVRUN_BINARY", "/plantstore")
	synced := env("DEVRUN_SYNCED", "/dev-sync/plantstore")
	dlvAddr := os.Getenv("DEVRUN_DLV_ADDR")
	stopTimeout, err := time.ParseDuration(env("DEVRUN_STOP_TIMEOUT", "5s"))
	if err != nil {
		logf("DEVRUN_STOP_TIMEOUT: %v", err)
		return 2
	}
	if fi, err := os.Stat(filepath.Dir(synced)); (err != nil || !fi.IsDir()) && dlvAddr == "" {
		// A one-shot command (a hook Job): nothing is synced to it.
		err := syscall.Exec(baked, append([]string{baked}, args...), os.Environ())
		logf("exec %s: %v", baked, err)
		return 127
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	var (
		child *exec.Cmd
		done  chan int
	)
	start := func() {
		bin := baked
		if _, ok := stat(synced); ok {
			bin = synced
		}
		argv := append([]string{bin}, args...)
		if dlvAddr != "" {
			argv = append([]string{"/dlv", "exec", "--headless", "--accept-multiclient", "--continue",
				"--api-version=2", "--listen=" + dlvAddr, bin, "--"}, args...)
		}
		child = exec.Command(argv[0], argv[1:]...)
		child.Stdin, child.Stdout, child.Stderr = nil, os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			logf("start %s: %v; waiting for a new binary", bin, err)
			child, done = nil, nil
			return
		}
		logf("started %s (pid %d)", strings.Join(argv, " "), child.Process.Pid)
		d := make(chan int, 1)
		go func(c *exec.Cmd) {
			err := c.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
				if code < 0 {
					code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
				}
			}
			d <- code
		}(child)
		done = d
	}
	stop := func(sig os.Signal) int {
		if child == nil {
			return 0
		}
		_ = child.Process.Signal(sig)
		select {
		case code := <-done:
			child, done = nil, nil
			return code
		case <-time.After(stopTimeout):
			logf("pid %d still running after %s: killing it", child.Process.Pid, stopTimeout)
			_ = child.Process.Kill()
			code := <-done
			child, done = nil, nil
			return code
		}
	}

	seen, _ := stat(synced)
	start()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case s := <-sigs:
			return stop(s)
		case code := <-done:
			logf("pid %d exited with %d; waiting for a new binary", child.Process.Pid, code)
			child, done = nil, nil
		case <-tick.C:
			id, ok := stat(synced)
			if !ok || id == seen {
				continue
			}
			seen = id
			t := time.Now()
			stop(syscall.SIGTERM)
			start()
			logf("new binary %s: restarted in %s", synced, time.Since(t).Round(time.Millisecond))
		}
	}
}

// untar extracts a tar stream as "tar xmf - -C DIR [--no-same-owner]" does:
// the only form skaffold's sync uses. Modification times are the time of
// extraction (m) and owners are never restored.
func untar(args []string, in io.Reader) error {
	dir := "."
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-C" && i+1 < len(args):
			dir = args[i+1]
			i++
		case a == "xmf" || a == "-xmf" || a == "-" || a == "--no-same-owner":
		default:
			return fmt.Errorf("unsupported argument %q (this tar only extracts, as skaffold's sync asks: xmf - -C DIR)", a)
		}
	}
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.Clean("/"+h.Name))
		mode := os.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".sync-*")
			if err != nil {
				return err
			}
			_, err = io.Copy(tmp, tr)
			if err == nil {
				err = tmp.Chmod(mode)
			}
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(tmp.Name(), name)
			}
			if err != nil {
				_ = os.Remove(tmp.Name())
				return err
			}
		case tar.TypeSymlink:
			_ = os.Remove(name)
			if err := os.Symlink(h.Linkname, name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: unsupported entry type %q", h.Name, h.Typeflag)
		}
	}
}
