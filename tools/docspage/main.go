// Command docspage keeps the renderer of the API reference page (GET /docs)
// vendored in internal/docspage/assets, where the binary embeds it.
//
//	docspage [-root DIR] update [-version X.Y.Z|latest]
//	docspage [-root DIR] check
//
// The manifest, internal/docspage/assets/manifest.json, is the one place that
// names the renderer: its npm package, its version, the npm integrity
// (sha512) of the package's tarball, and for each file taken from the
// tarball its path there, the name it is served under, its size and its
// SHA-256. Each file is embedded gzip-compressed as NAME.gz.
//
// update asks npm (the registry npm is configured with) for the package at
// the version given (default: the manifest's), checks the tarball npm
// downloads against the integrity the registry publishes for it, and
// rewrites the files and the manifest. check (make lint) verifies offline
// that every embedded file is the one the manifest records and names the
// manifest's package and version, so that neither an edited file nor a
// version written into the manifest by hand gets past it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "docspage:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("docspage", flag.ContinueOnError)
	root := fs.String("root", ".", "the repository's top directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir := assetsDir(*root)
	switch cmd := fs.Arg(0); cmd {
	case "check":
		m, err := check(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %s: the %d embedded file(s) are the manifest's\n", m.Package, m.Version, len(m.Files))
		return nil
	case "update":
		sub := flag.NewFlagSet("update", flag.ContinueOnError)
		version := sub.String("version", "", "the version to vendor, or latest (default: the manifest's)")
		if err := sub.Parse(fs.Args()[1:]); err != nil {
			return err
		}
		m, err := update(dir, *version, npm{})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "vendored %s %s (%s) into %s\n", m.Package, m.Version, m.Integrity, dir)
		return nil
	default:
		return errors.New("usage: docspage [-root DIR] update [-version X.Y.Z|latest] | check")
	}
}
