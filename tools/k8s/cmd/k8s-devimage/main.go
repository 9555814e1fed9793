// Command k8s-devimage writes plantstore's development image (skaffold.yaml;
// never the release image, which tools/image/build.sh and the Dockerfile
// build) as a Docker image archive, the format `docker load`, `podman load`
// and `ctr images import` all read, in well under a second and with no
// daemon, buildah or root: three uncompressed layers whose bytes depend only
// on their files (times are zero), so that the two that rarely change keep
// their digests and a node or a daemon stores them once.
//
//	base     /etc/passwd, /etc/group, /etc/nsswitch.conf (tools/image/base:
//	         nonroot 65532, as the release image's), /tmp, /home/nonroot, and
//	         the host's CA bundle when there is one
//	tools    /devrun (tools/k8s/cmd/k8s-devrun, PID 1; /bin/tar links to it
//	         for skaffold's file sync) and, for the debug profile, /dlv
//	service  /plantstore
//
// With -load, it also sends the archive to the Docker Engine API at
// $DOCKER_HOST (a unix socket: Docker's, or the podman API service of
// tools/k8s/skaffold.sh), as skaffold's local builder expects of a custom
// build. It prints the image ID (the config's digest).
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

type file struct {
	name    string // path in the image, without the leading /
	mode    int64
	uid     int
	dir     bool
	link    string // a symlink's target
	content func() (io.ReadCloser, int64, error)
}

func fromHost(path string) func() (io.ReadCloser, int64, error) {
	return func() (io.ReadCloser, int64, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, 0, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, err
		}
		return f, fi.Size(), nil
	}
}

// writeTar writes files to w as an uncompressed tar whose bytes depend only
// on the files (times are zero).
func writeTar(w io.Writer, files []file) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		var rc io.ReadCloser
		switch {
		case f.dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.name+"/"
		case f.link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.link
		default:
			var size int64
			var err error
			if rc, size, err = f.content(); err != nil {
				return err
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if rc != nil {
			_, err := io.Copy(tw, rc)
			rc.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	return tw.Close()
}

// writeTarFile writes the tar of files into dir, under the name that name
// gives its SHA-256 (hex) once it is whole, and returns that SHA-256.
func writeTarFile(dir string, name func(sum string) string, files []file) (string, error) {
	tmp, err := os.CreateTemp(dir, ".devimage-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if err := writeTar(io.MultiWriter(tmp, h), files); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return sum, os.Rename(tmp.Name(), filepath.Join(dir, name(sum)))
}

func main() {
	out := flag.String("o", "", "the archive to write")
	ref := flag.String("tag", "plantstore:dev", "the image's name")
	etc := flag.String("base-etc", "tools/image/base/etc", "passwd, group and nsswitch.conf of the base layer")
	devrun := flag.String("devrun", "", "the k8s-devrun binary")
	dlv := flag.String("dlv", "", "the dlv binary (the debug profile's image)")
	bin := flag.String("binary", "", "the service's binary")
	arch := flag.String("arch", runtime.GOARCH, "the image's architecture (GOARCH of its binaries)")
	load := flag.Bool("load", false, "load the archive into the Docker Engine API at $DOCKER_HOST")
	flag.Parse()
	if *out == "" || *devrun == "" || *bin == "" {
		flag.Usage()
		os.Exit(2)
	}
	id, err := write(*out, *ref, *arch, *etc, *devrun, *dlv, *bin)
	if err == nil && *load {
		err = loadArchive(*out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s-devimage:", err)
		os.Exit(1)
	}
	fmt.Println(id)
}

func write(out, ref, arch, etc, devrun, dlv, bin string) (string, error) {
	work, err := os.MkdirTemp(filepath.Dir(out), ".devimage-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)

	base := []file{{name: "etc", mode: 0o755, dir: true}}
	for _, n := range []string{"passwd", "group", "nsswitch.conf"} {
		base = append(base, file{name: "etc/" + n, mode: 0o644, content: fromHost(filepath.Join(etc, n))})
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		base = append(base, file{name: "etc/ssl", mode: 0o755, dir: true}, file{name: "etc/ssl/certs", mode: 0o755, dir: true},
			file{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, content: fromHost("/etc/ssl/certs/ca-certificates.crt")})
	}
	base = append(base, file{name: "tmp", mode: 0o1777, dir: true}, file{name: "home", mode: 0o755, dir: true},
		file{name: "home/nonroot", mode: 0o700, uid: 65532, dir: true})
	tools := []file{{name: "devrun", mode: 0o755, content: fromHost(devrun)}, {name: "bin", mode: 0o755, dir: true},
		{name: "bin/tar", mode: 0o777, link: "/devrun"}}
	if dlv != "" {
		tools = append(tools, file{name: "dlv", mode: 0o755, content: fromHost(dlv)})
	}
	service := []file{{name: "plantstore", mode: 0o755, content: fromHost(bin)}}

	var diffIDs, layerFiles []string
	for _, l := range [][]file{base, tools, service} {
		// A layer's name is its digest, the diff ID: it is not compressed.
		sum, err := writeTarFile(work, func(sum string) string { return sum + ".tar" }, l)
		if err != nil {
			return "", err
		}
		diffIDs = append(diffIDs, "sha256:"+sum)
		layerFiles = append(layerFiles, sum+".tar")
	}
	created := time.Unix(0, 0).UTC()
	config, err := json.Marshal(map[string]any{
		"architecture": arch,
		"os":           "linux",
		"created":      created,
		"config": map[string]any{
			"User":         "65532:65532",
			"WorkingDir":   "/home/nonroot",
			"Env":          []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
			"Entrypoint":   []string{"/devrun"},
			"ExposedPorts": map[string]any{"8080/tcp": map[string]any{}, "9090/tcp": map[string]any{}},
			"Labels": map[string]string{
				"org.opencontainers.image.title":       "plantstore-dev",
				"org.opencontainers.image.description": "plantstore's development image (skaffold dev): not a release",
			},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": diffIDs},
		"history": []map[string]any{{"created": created, "created_by": "tools/k8s/cmd/k8s-devimage"}},
	})
	if err != nil {
		return "", err
	}
	cfgSum := sha256.Sum256(config)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	if err := os.WriteFile(filepath.Join(work, cfgName), config, 0o644); err != nil {
		return "", err
	}
	manifest, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": layerFiles}})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(work, "manifest.json"), manifest, 0o644); err != nil {
		return "", err
	}

	var entries []file
	for _, n := range append(slices.Clone(layerFiles), cfgName, "manifest.json") {
		entries = append(entries, file{name: n, mode: 0o644, content: fromHost(filepath.Join(work, n))})
	}
	if _, err := writeTarFile(filepath.Dir(out), func(string) string { return filepath.Base(out) }, entries); err != nil {
		return "", err
	}
	return "sha256:" + strings.TrimSuffix(cfgName, ".json"), nil
}

// loadArchive is `docker load -i archive` through the Engine API.
func loadArchive(archive string) error {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	sock, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		return fmt.Errorf("DOCKER_HOST=%s: only a unix socket is supported (use docker load -i %s)", host, archive)
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := client.Post("http://docker/images/load?quiet=1", "application/x-tar", f)
	if err != nil {
		return fmt.Errorf("loading into %s: %w", host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
		return fmt.Errorf("loading into %s: %s: %s", host, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
