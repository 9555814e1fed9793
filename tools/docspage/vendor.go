package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// assetsDir is where the binary embeds the page from, under the root.
func assetsDir(root string) string {
	return filepath.Join(root, "internal", "docspage", "assets")
}

// ManifestFile names the manifest in the assets directory.
const ManifestFile = "manifest.json"

// Manifest records what is vendored: which package, which version, the
// tarball's integrity as npm publishes it, and every file taken from it.
type Manifest struct {
	Package   string `json:"package"`
	Version   string `json:"version"`
	License   string `json:"license"`
	Integrity string `json:"integrity"` // "sha512-<base64>" of the tarball
	Files     []File `json:"files"`
}

// File is one file of the tarball, embedded as Name + ".gz".
type File struct {
	From   string `json:"from"` // its path in the tarball
	Name   string `json:"name"` // the name it is served under: GET /docs/<name>
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex, of the file as in the tarball
}

// embedded is the name of f's compressed copy in the assets directory.
func (f File) embedded() string { return f.Name + ".gz" }

func readManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if m.Package == "" || m.Version == "" || len(m.Files) == 0 {
		return m, fmt.Errorf("%s: package, version and files are required", ManifestFile)
	}
	for _, f := range m.Files {
		if f.From == "" || f.Name == "" || strings.ContainsAny(f.Name, `/\`) {
			return m, fmt.Errorf("%s: file %+v needs a path in the tarball and a plain name", ManifestFile, f)
		}
	}
	return m, nil
}

func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644)
}

// versionMark is what the renderer's code says of itself (it logs it on
// start): a file naming another version is not the manifest's.
func versionMark(m Manifest) []byte { return []byte(m.Package + "@" + m.Version) }

// check verifies the embedded files against the manifest, offline: each
// file decompresses to the size and SHA-256 recorded, one of them names the
// package and version, and no compressed file is there that the manifest
// does not list.
func check(dir string) (Manifest, error) {
	m, err := readManifest(dir)
	if err != nil {
		return m, err
	}
	var errs []error
	marked := false
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.embedded()] = true
		content, err := gunzipFile(filepath.Join(dir, f.embedded()))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.embedded(), err))
			continue
		}
		if sum := sha256Hex(content); int64(len(content)) != f.Size || sum != f.SHA256 {
			errs = append(errs, fmt.Errorf("%s: %d bytes, SHA-256 %s; the manifest records %d bytes, %s: run make docs-page-update",
				f.embedded(), len(content), sum, f.Size, f.SHA256))
			continue
		}
		marked = marked || bytes.Contains(content, versionMark(m))
	}
	if len(errs) == 0 && !marked {
		errs = append(errs, fmt.Errorf("no embedded file names %s: the files are not that version's; run make docs-page-update", versionMark(m)))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return m, err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".gz") && !listed[e.Name()] {
			errs = append(errs, fmt.Errorf("%s is not in %s", e.Name(), ManifestFile))
		}
	}
	return m, errors.Join(errs...)
}

// registry is where update takes a package from.
type registry interface {
	// resolve returns the exact version a version or tag (latest) names
	// and the integrity the registry publishes for its tarball.
	resolve(pkg, version string) (exact, integrity string, err error)
	// tarball returns the package's tarball at an exact version.
	tarball(pkg, version string) ([]byte, error)
}

// update vendors the manifest's package at version (empty: the manifest's
// own version) from reg: the tarball must match the published integrity,
// and every file the manifest lists must be in it and name the version.
// Nothing is written unless all of that holds.
func update(dir, version string, reg registry) (Manifest, error) {
	m, err := readManifest(dir)
	if err != nil {
		return m, err
	}
	if version == "" {
		version = m.Version
	}
	exact, integrity, err := reg.resolve(m.Package, version)
	if err != nil {
		return m, fmt.Errorf("resolving %s@%s: %w", m.Package, version, err)
	}
	tgz, err := reg.tarball(m.Package, exact)
	if err != nil {
		return m, fmt.Errorf("downloading %s@%s: %w", m.Package, exact, err)
	}
	if got := sha512Integrity(tgz); got != integrity {
		return m, fmt.Errorf("the tarball of %s@%s has integrity %s; the registry publishes %s: refusing it", m.Package, exact, got, integrity)
	}
	from := make([]string, len(m.Files))
	for i, f := range m.Files {
		from[i] = f.From
	}
	contents, license, err := untar(tgz, from)
	if err != nil {
		return m, fmt.Errorf("%s@%s: %w", m.Package, exact, err)
	}
	next := Manifest{Package: m.Package, Version: exact, License: license, Integrity: integrity}
	compressed := make([][]byte, len(m.Files))
	marked := false
	for i, f := range m.Files {
		content := contents[f.From]
		f.Size, f.SHA256 = int64(len(content)), sha256Hex(content)
		next.Files = append(next.Files, f)
		marked = marked || bytes.Contains(content, versionMark(next))
		if compressed[i], err = gzipBytes(content); err != nil {
			return m, err
		}
	}
	if !marked {
		return m, fmt.Errorf("no file of %s@%s names %s, which check requires: choose files that do, or change the check", m.Package, exact, versionMark(next))
	}
	for i, f := range next.Files {
		if err := os.WriteFile(filepath.Join(dir, f.embedded()), compressed[i], 0o644); err != nil {
			return m, err
		}
	}
	return next, writeManifest(dir, next)
}

// untar returns the files of a package tarball at the paths wanted, and the
// license its package.json declares.
func untar(tgz []byte, wanted []string) (map[string][]byte, string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, "", err
	}
	files := map[string][]byte{}
	license := ""
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		want := slices.Contains(wanted, h.Name)
		if !want && h.Name != "package/package.json" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, "", err
		}
		if want {
			files[h.Name] = b
			continue
		}
		var pkg struct {
			License string `json:"license"`
		}
		if err := json.Unmarshal(b, &pkg); err != nil {
			return nil, "", fmt.Errorf("package/package.json: %w", err)
		}
		license = pkg.License
	}
	for _, w := range wanted {
		if _, ok := files[w]; !ok {
			return nil, "", fmt.Errorf("the tarball has no file %s", w)
		}
	}
	return files, license, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sha512Integrity is npm's integrity string (Subresource Integrity form).
func sha512Integrity(b []byte) string {
	sum := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// gzipBytes compresses at the best level, with no name or time in the
// header: the same content always gives the same bytes.
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gunzipFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
