package main

import (
	"archive/tar"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

func platformImage(t *testing.T, arch string, seed int64) v1.Image {
	t.Helper()
	img, err := random.Image(64, 2, random.WithSource(rand.NewSource(seed)))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestBuildIndexIsDeterministicAndAnnotated(t *testing.T) {
	ann := map[string]string{"org.opencontainers.image.version": "1.2.3", "org.opencontainers.image.revision": "abc"}
	build := func() v1.ImageIndex {
		idx, err := buildIndex([]v1.Image{platformImage(t, "amd64", 1), platformImage(t, "arm64", 2)}, ann)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	a, b := build(), build()
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Fatalf("two builds of the same images: %s and %s", da, db)
	}
	m, err := a.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("media type %s", m.MediaType)
	}
	if m.Annotations["org.opencontainers.image.version"] != "1.2.3" {
		t.Errorf("index annotations %v", m.Annotations)
	}
	var archs []string
	for _, d := range m.Manifests {
		archs = append(archs, d.Platform.Architecture)
		img, err := a.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		im, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if im.Annotations["org.opencontainers.image.revision"] != "abc" {
			t.Errorf("%s manifest annotations %v", d.Platform.Architecture, im.Annotations)
		}
	}
	if strings.Join(archs, ",") != "amd64,arm64" {
		t.Errorf("platforms %v", archs)
	}

	// Writing and reading back the layout keeps the digest: what is pushed is what was built.
	dir := filepath.Join(t.TempDir(), "layout")
	if err := writeLayout(dir, a, "1.2.3"); err != nil {
		t.Fatal(err)
	}
	back, err := indexFromLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Digest(); d != da {
		t.Errorf("layout holds %s, built %s", d, da)
	}
	if err := writeLayout(dir, a, ""); err == nil {
		t.Error("writeLayout over an existing directory succeeded")
	}
}

func TestBuildIndexRefusesTwoImagesOfOnePlatform(t *testing.T) {
	if _, err := buildIndex([]v1.Image{platformImage(t, "amd64", 1), platformImage(t, "amd64", 2)}, nil); err == nil {
		t.Fatal("two linux/amd64 images made an index")
	}
}

func TestUntarKeepsEveryNameInside(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "evil.tar")
	writeTar(t, archive, "../escape", "x")
	if err := untar(archive, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "escape")); err == nil {
		t.Fatal("untar wrote outside its directory")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "escape")); err != nil || string(b) != "x" {
		t.Fatalf("../escape not kept inside as out/escape: %q, %v", b, err)
	}
}

func writeTar(t *testing.T, path, name, content string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}
