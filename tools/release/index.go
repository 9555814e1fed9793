package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func runIndex(args []string) error {
	fs := flag.NewFlagSet("index", flag.ExitOnError)
	out := fs.String("o", "", "OCI layout directory to write (must not exist)")
	refName := fs.String("ref-name", "", "org.opencontainers.image.ref.name of the index in the layout (the version)")
	annotations := keyValues{}
	fs.Var(annotations, "annotation", "k=v annotation on the index and every manifest (repeatable)")
	_ = fs.Parse(args)
	if *out == "" || fs.NArg() == 0 {
		return errors.New("need -o DIR and at least one archive")
	}
	tmp, err := os.MkdirTemp("", "releasetool-index-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var images []v1.Image
	for i, archive := range fs.Args() {
		img, err := imageFromArchive(archive, filepath.Join(tmp, fmt.Sprint(i)))
		if err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		images = append(images, img)
	}
	idx, err := buildIndex(images, annotations)
	if err != nil {
		return err
	}
	if err := writeLayout(*out, idx, *refName); err != nil {
		return err
	}
	return printDigest(idx)
}

// printDigest prints the index's digest, the one line the scripts read.
func printDigest(idx v1.ImageIndex) error {
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println(d)
	return nil
}

// imageFromArchive unpacks an OCI archive holding one image manifest into dir
// and returns that image.
func imageFromArchive(archive, dir string) (v1.Image, error) {
	if err := untar(archive, dir); err != nil {
		return nil, err
	}
	root, d, err := soleDescriptor(dir, types.MediaType.IsImage, "image manifest")
	if err != nil {
		return nil, err
	}
	return root.Image(d.Digest)
}

// buildIndex makes an OCI image index of the images, each annotated and
// described by its config's platform; the index carries the annotations too.
func buildIndex(images []v1.Image, annotations map[string]string) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		platform := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
		if seen[platform.String()] {
			return nil, fmt.Errorf("two images for %s", platform.String())
		}
		seen[platform.String()] = true
		annotated, ok := mutate.Annotations(img, annotations).(v1.Image)
		if !ok {
			return nil, errors.New("annotating an image did not return an image")
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        annotated,
			Descriptor: v1.Descriptor{Platform: &platform},
		})
	}
	annotatedIdx, ok := mutate.Annotations(idx, annotations).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("annotating the index did not return an index")
	}
	return annotatedIdx, nil
}

func writeLayout(dir string, idx v1.ImageIndex, refName string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if refName != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": refName}))
	}
	return p.AppendIndex(idx, opts...)
}

func runPush(args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dir := fs.String("layout", "", "OCI layout directory written by index")
	_ = fs.Parse(args)
	if *dir == "" || fs.NArg() != 1 {
		return errors.New("need -layout DIR and one reference")
	}
	ref, err := name.ParseReference(fs.Arg(0))
	if err != nil {
		return err
	}
	idx, err := indexFromLayout(*dir)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return err
	}
	return printDigest(idx)
}

// indexFromLayout returns the one image index a layout written by index holds.
func indexFromLayout(dir string) (v1.ImageIndex, error) {
	root, d, err := soleDescriptor(dir, types.MediaType.IsIndex, "image index")
	if err != nil {
		return nil, err
	}
	return root.ImageIndex(d.Digest)
}

// soleDescriptor opens the OCI layout dir, whose index.json must list exactly
// one descriptor, of the kind that is tells.
func soleDescriptor(dir string, is func(types.MediaType) bool, kind string) (v1.ImageIndex, v1.Descriptor, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	m, err := root.IndexManifest()
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	if len(m.Manifests) != 1 || !is(m.Manifests[0].MediaType) {
		return nil, v1.Descriptor{}, fmt.Errorf("%s: want one %s in index.json, found %d descriptors", dir, kind, len(m.Manifests))
	}
	return root, m.Manifests[0], nil
}

// untar extracts the regular files and directories of an archive into dir,
// refusing names that would leave it.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			w, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, tr)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
