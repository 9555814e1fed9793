package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	gwclient "github.com/moby/buildkit/frontend/gateway/client"
	gwpb "github.com/moby/buildkit/frontend/gateway/pb"
	"github.com/moby/buildkit/solver/pb"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
	fstypes "github.com/tonistiigi/fsutil/types"
)

// offlineGateway is a BuildKit gateway client that never reaches a daemon or
// a registry. It is what lets the real Dockerfile frontend
// (frontend/dockerfile/builder.Build, the code behind `docker build --check`)
// run here:
//
//   - Solve answers the frontend's two local sources, "context" and
//     "dockerfile", with the directories on disk, so that the frontend reads
//     the Dockerfile and .dockerignore exactly as it does in a build (the
//     CopyIgnoredFile rule needs the latter);
//   - base image metadata comes from basemeta.json in this folder instead of
//     the registry (see resolveImage);
//   - nothing else is supported: any other solve, or a container, is an error.
type offlineGateway struct {
	contextDir    string
	dockerfileDir string
	opts          map[string]string
	warnings      []string
}

var _ gwclient.Client = (*offlineGateway)(nil)

func (g *offlineGateway) BuildOpts() gwclient.BuildOpts {
	return gwclient.BuildOpts{
		Opts:      g.opts,
		SessionID: "offline",
		Product:   "plantstore-imagetool",
		Workers: []gwclient.WorkerInfo{{
			ID:        "offline",
			Platforms: []ocispecs.Platform{{OS: "linux", Architecture: runtime.GOARCH}},
		}},
		LLBCaps: pb.Caps.CapSet(pb.Caps.All()),
		Caps:    gwpb.Caps.CapSet(gwpb.Caps.All()),
	}
}

func (g *offlineGateway) Inputs(context.Context) (map[string]llb.State, error) {
	return map[string]llb.State{}, nil
}

func (g *offlineGateway) NewContainer(context.Context, gwclient.NewContainerRequest) (gwclient.Container, error) {
	return nil, fmt.Errorf("offline gateway: containers are not supported")
}

func (g *offlineGateway) Warn(_ context.Context, _ digest.Digest, msg string, _ gwclient.WarnOpts) error {
	g.warnings = append(g.warnings, msg)
	return nil
}

// Solve serves llb.Local("context") and llb.Local("dockerfile") from disk.
func (g *offlineGateway) Solve(_ context.Context, req gwclient.SolveRequest) (*gwclient.Result, error) {
	if req.Definition == nil {
		return nil, fmt.Errorf("offline gateway: solve without a definition")
	}
	var local string
	for _, dt := range req.Definition.Def {
		var op pb.Op
		if err := op.UnmarshalVT(dt); err != nil {
			return nil, fmt.Errorf("offline gateway: decoding an LLB op: %w", err)
		}
		src := op.GetSource()
		if src == nil {
			continue
		}
		name, ok := strings.CutPrefix(src.Identifier, "local://")
		if !ok {
			return nil, fmt.Errorf("offline gateway: cannot solve %s offline", src.Identifier)
		}
		local = name
	}
	var dir string
	switch local {
	case "context":
		dir = g.contextDir
	case "dockerfile":
		dir = g.dockerfileDir
	default:
		return nil, fmt.Errorf("offline gateway: unknown local source %q", local)
	}
	res := gwclient.NewResult()
	res.SetRef(&dirRef{name: local, dir: dir})
	return res, nil
}

// ResolveSourceMetadata and ResolveImageConfig answer from basemeta.json.
func (g *offlineGateway) ResolveSourceMetadata(_ context.Context, op *pb.SourceOp, _ sourceresolver.Opt) (*sourceresolver.MetaResponse, error) {
	ref, ok := strings.CutPrefix(op.Identifier, "docker-image://")
	if !ok {
		return nil, fmt.Errorf("offline gateway: cannot resolve %s offline", op.Identifier)
	}
	cfg, err := resolveImage(ref)
	if err != nil {
		return nil, err
	}
	return &sourceresolver.MetaResponse{Op: op, Image: &sourceresolver.ResolveImageResponse{Config: cfg}}, nil
}

func (g *offlineGateway) ResolveImageConfig(_ context.Context, ref string, _ sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	cfg, err := resolveImage(ref)
	if err != nil {
		return "", "", nil, err
	}
	return ref, "", cfg, nil
}

//go:embed basemeta.json
var baseMetaJSON []byte

// baseMeta is one entry of basemeta.json: the image config a registry would
// return for a repository, with "{tag}" in env values replaced by the tag's
// leading version (golang:1.26.11-bookworm gives GOLANG_VERSION=1.26.11).
type baseMeta struct {
	Repository string          `json:"repository"`
	TagPrefix  string          `json:"tagPrefix"`
	TagSuffix  string          `json:"tagSuffix"`
	Config     json.RawMessage `json:"config"`
}

// resolveImage returns an OCI image config for ref without a registry. Only
// the base images listed in basemeta.json resolve; any other is an error, so
// that a new base image is a deliberate change here and not a silent pass.
// The configs carry what the lint rules look at: the environment (UndefinedVar
// knows $PATH, $GOPATH...), the platform (InvalidBaseImagePlatform) and a
// non-empty rootfs (so the image is not taken for scratch).
func resolveImage(ref string) ([]byte, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, fmt.Errorf("offline resolver: %q: %w", ref, err)
	}
	tag := "latest"
	if t, ok := named.(reference.Tagged); ok {
		tag = t.Tag()
	}
	var metas []baseMeta
	if err := json.Unmarshal(baseMetaJSON, &metas); err != nil {
		return nil, fmt.Errorf("offline resolver: basemeta.json: %w", err)
	}
	for _, m := range metas {
		if m.Repository != reference.FamiliarName(named) && m.Repository != named.Name() {
			continue
		}
		if !strings.HasPrefix(tag, m.TagPrefix) || !strings.HasSuffix(tag, m.TagSuffix) {
			continue
		}
		version := strings.TrimSuffix(tag, m.TagSuffix)
		var img ocispecs.Image
		if err := json.Unmarshal(m.Config, &img); err != nil {
			return nil, fmt.Errorf("offline resolver: basemeta.json entry %s: %w", m.Repository, err)
		}
		for i, e := range img.Config.Env {
			img.Config.Env[i] = strings.ReplaceAll(e, "{tag}", version)
		}
		img.Platform = ocispecs.Platform{OS: "linux", Architecture: runtime.GOARCH}
		if len(img.RootFS.DiffIDs) == 0 {
			img.RootFS = ocispecs.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromString(ref)}}
		}
		return json.Marshal(img)
	}
	return nil, fmt.Errorf("offline resolver: no metadata for base image %q: add its config to tools/image/basemeta.json", ref)
}

// dirRef is a gateway reference backed by a directory.
type dirRef struct {
	name string
	dir  string
}

// path is p inside the directory: a name cannot leave it.
func (r *dirRef) path(p string) string {
	return filepath.Join(r.dir, filepath.FromSlash(path.Clean("/"+filepath.ToSlash(p))))
}

func (r *dirRef) ToState() (llb.State, error) { return llb.Local(r.name), nil }

func (r *dirRef) Evaluate(context.Context) error { return nil }

func (r *dirRef) ReadFile(_ context.Context, req gwclient.ReadRequest) ([]byte, error) {
	dt, err := os.ReadFile(r.path(req.Filename))
	if err != nil {
		return nil, err
	}
	if rg := req.Range; rg != nil {
		if rg.Offset > len(dt) {
			return nil, nil
		}
		dt = dt[rg.Offset:]
		if rg.Length > 0 && rg.Length < len(dt) {
			dt = dt[:rg.Length]
		}
	}
	return dt, nil
}

func (r *dirRef) StatFile(_ context.Context, req gwclient.StatRequest) (*fstypes.Stat, error) {
	fi, err := os.Stat(r.path(req.Path))
	if err != nil {
		return nil, err
	}
	return &fstypes.Stat{Path: req.Path, Mode: uint32(fi.Mode()), Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

func (r *dirRef) ReadDir(context.Context, gwclient.ReadDirRequest) ([]*fstypes.Stat, error) {
	return nil, &fs.PathError{Op: "readdir", Path: r.dir, Err: fs.ErrInvalid}
}
