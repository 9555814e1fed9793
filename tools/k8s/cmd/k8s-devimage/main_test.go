package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The archive is a Docker image archive whose layers are what their diff
// IDs say, and two builds of the same files are the same image.
func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"devrun": "devrun", "plantstore": "service", "etc/passwd": "p", "etc/group": "g", "etc/nsswitch.conf": "n"} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "image.tar")
	id, err := write(out, "docker.io/library/plantstore:x", "amd64", filepath.Join(dir, "etc"), filepath.Join(dir, "devrun"), "", filepath.Join(dir, "plantstore"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v %s", err, files["manifest.json"])
	}
	m := manifest[0]
	var config struct {
		Architecture string
		Config       struct {
			Entrypoint []string
			User       string
		}
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[m.Config], &config); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(files[m.Config])
	if id != "sha256:"+hex.EncodeToString(sum[:]) || m.RepoTags[0] != "docker.io/library/plantstore:x" {
		t.Fatalf("id %s, tags %v", id, m.RepoTags)
	}
	if config.Architecture != "amd64" || config.Config.Entrypoint[0] != "/devrun" || config.Config.User != "65532:65532" || len(m.Layers) != 3 {
		t.Fatalf("config %+v, layers %v", config, m.Layers)
	}
	var names []string
	for i, l := range m.Layers {
		sum := sha256.Sum256(files[l])
		if config.RootFS.DiffIDs[i] != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("layer %s: diff ID %s", l, config.RootFS.DiffIDs[i])
		}
		tr := tar.NewReader(strings.NewReader(string(files[l])))
		for h, err := tr.Next(); err == nil; h, err = tr.Next() {
			names = append(names, h.Name)
		}
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "bin/tar") || !strings.Contains(got, "plantstore") || !strings.Contains(got, "home/nonroot/") {
		t.Fatalf("files: %s", got)
	}
	again, err := write(out, "docker.io/library/plantstore:x", "amd64", filepath.Join(dir, "etc"), filepath.Join(dir, "devrun"), "", filepath.Join(dir, "plantstore"))
	if err != nil || again != id {
		t.Fatalf("a second build: %s, %v (first %s)", again, err, id)
	}
}
