// Command releasetool assembles and publishes plantstore's release artifacts
// for tools/release/release.sh (docs/release.md):
//
//	releasetool index -o DIR -annotation k=v ... ARCHIVE...
//	    join per-platform OCI archives (tools/image/build.sh) into one OCI
//	    image index in the OCI layout DIR, with the annotations on the index
//	    and on every manifest; prints the index digest
//	releasetool push -layout DIR REF
//	    push the layout's image index to REF (a tag); prints the digest
//	releasetool provenance -o FILE -version V -revision SHA -builder-id ID ...
//	    write a SLSA v1 provenance predicate describing the build
//
// The layout of an index carries no timestamps of its own: two builds of one
// commit (SOURCE_DATE_EPOCH from its commit time) give the same digests.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "index":
		err = runIndex(os.Args[2:])
	case "push":
		err = runPush(os.Args[2:])
	case "provenance":
		err = runProvenance(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "releasetool "+os.Args[1]+": "+err.Error())
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: releasetool index|push|provenance [flags] (see the package doc)")
	os.Exit(2)
}

// keyValues is a repeatable k=v flag.
type keyValues map[string]string

func (kv keyValues) String() string {
	parts := make([]string, 0, len(kv))
	for k, v := range kv {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	kv[k] = v
	return nil
}

var _ flag.Value = keyValues{}
