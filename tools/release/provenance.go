package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// buildType names what release.sh does; docs/release.md describes it.
const buildType = "https://github.com/plantstore/plantstore/blob/main/docs/release.md#build-type"

// The SLSA v1.0 provenance predicate (https://slsa.dev/provenance/v1), which
// cosign wraps in an in-toto statement whose subject is the image digest.
type (
	provenance struct {
		BuildDefinition buildDefinition `json:"buildDefinition"`
		RunDetails      runDetails      `json:"runDetails"`
	}
	buildDefinition struct {
		BuildType            string               `json:"buildType"`
		ExternalParameters   map[string]any       `json:"externalParameters"`
		InternalParameters   map[string]any       `json:"internalParameters,omitempty"`
		ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies,omitempty"`
	}
	resourceDescriptor struct {
		URI    string            `json:"uri"`
		Digest map[string]string `json:"digest,omitempty"`
	}
	runDetails struct {
		Builder  builder  `json:"builder"`
		Metadata metadata `json:"metadata"`
	}
	builder struct {
		ID string `json:"id"`
	}
	metadata struct {
		InvocationID string `json:"invocationId,omitempty"`
		StartedOn    string `json:"startedOn,omitempty"`
		FinishedOn   string `json:"finishedOn,omitempty"`
	}
)

func runProvenance(args []string) error {
	fs := flag.NewFlagSet("provenance", flag.ExitOnError)
	out := fs.String("o", "", "file to write the predicate to")
	source := fs.String("source", "git+https://github.com/plantstore/plantstore", "source repository URI")
	revision := fs.String("revision", "", "git commit the release is built from")
	version := fs.String("version", "", "release version")
	builderID := fs.String("builder-id", "", "who ran the build (a workflow URL in hosted CI)")
	invocation := fs.String("invocation-id", "", "the run's id")
	started := fs.Int64("started", 0, "Unix time the build started")
	finished := fs.Int64("finished", 0, "Unix time the build finished")
	internal := keyValues{}
	fs.Var(internal, "internal", "k=v internal parameter, such as goToolchain or sourceDateEpoch (repeatable)")
	var deps stringList
	fs.Var(&deps, "dep", "'ALG:HEX URI' resolved dependency, such as a base package (repeatable)")
	var platforms stringList
	fs.Var(&platforms, "platform", "os/arch built (repeatable)")
	_ = fs.Parse(args)
	if *out == "" || *revision == "" || *version == "" || *builderID == "" {
		return errors.New("need -o, -revision, -version and -builder-id")
	}
	p, err := newProvenance(*source, *revision, *version, *builderID, *invocation, *started, *finished, platforms, internal, deps)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}

func newProvenance(source, revision, version, builderID, invocation string, started, finished int64,
	platforms []string, internal map[string]string, deps []string) (provenance, error) {
	resolved := []resourceDescriptor{{URI: source + "@" + revision, Digest: map[string]string{"gitCommit": revision}}}
	for _, dep := range deps {
		digest, uri, _ := strings.Cut(dep, " ")
		alg, hex, ok := strings.Cut(digest, ":")
		if !ok || alg == "" || hex == "" || uri == "" {
			return provenance{}, fmt.Errorf("dependency %q is not 'ALG:HEX URI'", dep)
		}
		resolved = append(resolved, resourceDescriptor{URI: uri, Digest: map[string]string{alg: hex}})
	}
	internalParams := map[string]any{}
	for k, v := range internal {
		internalParams[k] = v
	}
	return provenance{
		BuildDefinition: buildDefinition{
			BuildType: buildType,
			ExternalParameters: map[string]any{
				"source":    map[string]any{"uri": source, "digest": map[string]string{"gitCommit": revision}},
				"version":   version,
				"platforms": platforms,
			},
			InternalParameters:   internalParams,
			ResolvedDependencies: resolved,
		},
		RunDetails: runDetails{
			Builder:  builder{ID: builderID},
			Metadata: metadata{InvocationID: invocation, StartedOn: rfc3339(started), FinishedOn: rfc3339(finished)},
		},
	}, nil
}

func rfc3339(unix int64) string {
	if unix == 0 {
		return ""
	}
	return time.Unix(unix, 0).UTC().Format(time.RFC3339)
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
