package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRegistry serves one package's tarballs, by version, with the
// integrity it publishes for each (the tarball's own unless set).
type fakeRegistry struct {
	tarballs  map[string][]byte
	integrity map[string]string
	latest    string
}

func (r fakeRegistry) resolve(pkg, version string) (string, string, error) {
	if version == "latest" {
		version = r.latest
	}
	tgz, ok := r.tarballs[version]
	if !ok {
		return "", "", errors.New("no such version")
	}
	if i, ok := r.integrity[version]; ok {
		return version, i, nil
	}
	return version, sha512Integrity(tgz), nil
}

func (r fakeRegistry) tarball(pkg, version string) ([]byte, error) { return r.tarballs[version], nil }

// packageTarball is an npm tarball of the given files under package/, with
// a package.json declaring the license.
func packageTarball(t *testing.T, license string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	files["package.json"] = `{"name": "@example/renderer", "license": "` + license + `"}`
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func renderer(version string) string {
	return `console.info("@example/renderer@` + version + `");/* the renderer */`
}

// assets is an assets directory whose manifest names the package and the
// one file to take, at version, not yet vendored.
func assets(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	m := Manifest{Package: "@example/renderer", Version: version, Files: []File{{From: "package/dist/renderer.js", Name: "renderer.js"}}}
	if err := writeManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func registryOf(t *testing.T, versions ...string) fakeRegistry {
	r := fakeRegistry{tarballs: map[string][]byte{}, integrity: map[string]string{}}
	for _, v := range versions {
		r.tarballs[v] = packageTarball(t, "MIT", map[string]string{"dist/renderer.js": renderer(v), "README.md": "not taken"})
		r.latest = v
	}
	return r
}

// update writes the files and a manifest that check then accepts; latest
// moves to the newest version.
func TestUpdateThenCheck(t *testing.T) {
	dir := assets(t, "1.0.0")
	reg := registryOf(t, "1.0.0", "1.1.0")
	m, err := update(dir, "", reg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != "1.0.0" || m.License != "MIT" || m.Integrity != sha512Integrity(reg.tarballs["1.0.0"]) {
		t.Errorf("manifest %+v", m)
	}
	if f := m.Files[0]; f.Size != int64(len(renderer("1.0.0"))) || f.SHA256 != sha256Hex([]byte(renderer("1.0.0"))) {
		t.Errorf("file %+v", f)
	}
	if _, err := check(dir); err != nil {
		t.Fatalf("check after update: %v", err)
	}
	// The same content gives the same bytes: an update to the same version
	// changes no file.
	before, _ := os.ReadFile(filepath.Join(dir, "renderer.js.gz"))
	if _, err := update(dir, "", reg); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "renderer.js.gz"))
	if !bytes.Equal(before, after) {
		t.Error("vendoring the same version again changed the compressed file")
	}
	if m, err = update(dir, "latest", reg); err != nil || m.Version != "1.1.0" {
		t.Fatalf("update to latest: %+v, %v", m, err)
	}
	if got, err := readManifest(dir); err != nil || got.Version != "1.1.0" {
		t.Errorf("manifest after latest: %+v, %v", got, err)
	}
	if _, err := check(dir); err != nil {
		t.Errorf("check after update to latest: %v", err)
	}
}

// update refuses, and writes nothing, when the tarball is not what the
// registry publishes, lacks a file, or its file does not name the version.
func TestUpdateRefuses(t *testing.T) {
	cases := []struct {
		name      string
		registry  func(fakeRegistry)
		complaint string
	}{
		{"a tarball whose integrity is not the published one", func(r fakeRegistry) {
			r.integrity["1.0.0"] = sha512Integrity([]byte("another tarball"))
		}, "refusing"},
		{"a tarball without the file", func(r fakeRegistry) {
			r.tarballs["1.0.0"] = packageTarball(t, "MIT", map[string]string{"dist/other.js": renderer("1.0.0")})
		}, "no file package/dist/renderer.js"},
		{"a file that does not name its version", func(r fakeRegistry) {
			r.tarballs["1.0.0"] = packageTarball(t, "MIT", map[string]string{"dist/renderer.js": renderer("0.9.0")})
		}, "names @example/renderer@1.0.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := assets(t, "1.0.0")
			manifest, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
			reg := registryOf(t, "1.0.0")
			tc.registry(reg)
			_, err := update(dir, "", reg)
			if err == nil || !strings.Contains(err.Error(), tc.complaint) {
				t.Fatalf("update: %v, want an error saying %q", err, tc.complaint)
			}
			after, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
			if !bytes.Equal(manifest, after) {
				t.Error("the manifest changed")
			}
			if _, err := os.Stat(filepath.Join(dir, "renderer.js.gz")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file was written: %v", err)
			}
		})
	}
}

// check refuses a tampered, missing or extra file, and a version written
// into the manifest by hand, each with a message naming it.
func TestCheckRefuses(t *testing.T) {
	cases := []struct {
		name      string
		change    func(t *testing.T, dir string)
		complaint string
	}{
		{"an edited file", func(t *testing.T, dir string) {
			b, err := gzipBytes([]byte(renderer("1.0.0") + "/* injected */"))
			if err != nil {
				t.Fatal(err)
			}
			writeTestFile(t, filepath.Join(dir, "renderer.js.gz"), b)
		}, "run make docs-page-update"},
		{"a missing file", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "renderer.js.gz")); err != nil {
				t.Fatal(err)
			}
		}, "renderer.js.gz"},
		{"a file not gzip", func(t *testing.T, dir string) {
			writeTestFile(t, filepath.Join(dir, "renderer.js.gz"), []byte(renderer("1.0.0")))
		}, "renderer.js.gz"},
		{"a file the manifest does not list", func(t *testing.T, dir string) {
			writeTestFile(t, filepath.Join(dir, "extra.js.gz"), nil)
		}, "extra.js.gz is not in manifest.json"},
		{"a version written into the manifest by hand", func(t *testing.T, dir string) {
			m, err := readManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			m.Version = "1.1.0"
			if err := writeManifest(dir, m); err != nil {
				t.Fatal(err)
			}
		}, "no embedded file names @example/renderer@1.1.0"},
		{"a manifest with a field it does not know", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
			writeTestFile(t, filepath.Join(dir, ManifestFile), bytes.Replace(b, []byte(`"version"`), []byte(`"versoin"`), 1))
		}, "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := assets(t, "1.0.0")
			if _, err := update(dir, "", registryOf(t, "1.0.0")); err != nil {
				t.Fatal(err)
			}
			tc.change(t, dir)
			_, err := check(dir)
			if err == nil || !strings.Contains(err.Error(), tc.complaint) {
				t.Fatalf("check: %v, want an error saying %q", err, tc.complaint)
			}
		})
	}
}

// The repository's embedded renderer is the one its manifest records.
func TestRepositoryAssets(t *testing.T) {
	m, err := check(assetsDir(filepath.Join("..", "..")))
	if err != nil {
		t.Fatal(err)
	}
	if m.Package != "@scalar/api-reference" || !strings.HasPrefix(m.Integrity, "sha512-") {
		t.Errorf("manifest %+v", m)
	}
}

func writeTestFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
