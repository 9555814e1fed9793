package kube

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Usage heads the help of `plantstore ensure-secrets`.
const usage = `Usage: plantstore ensure-secrets [flags]

Creates the Secrets the Helm chart generates (the API token, helm test's
read-only token, the Redis password) when they are missing, and leaves the
values of those that exist as they are, except a tokens file the chart
rendered from auth.tokens (its first line says so), which means auth.tokens
was removed: it is replaced by a generated token, revoking those tokens; the chart runs it as a pre-install
and pre-upgrade hook, in a pod whose service account may get, create and
update Secrets. Every Secret it keeps is annotated helm.sh/resource-policy:
keep (and Argo CD's Prune=false), so that an uninstall, a rollback or a sync
never deletes it: reinstalled, the release gets the same token and password.
The identity lines of --identity (JWT callers) are kept in a block of the
tokens file that each run rewrites, beside the generated token.

`

// Run is the command: it parses args, keeps the Secrets through the API
// server of the pod it runs in (or of --server), and reports one line a
// Secret on out.
func Run(ctx context.Context, args []string, out, errOut io.Writer, generate func() (string, error)) error {
	var spec Spec
	var cfg ClientConfig
	labels, annotations := pairs{}, pairs{}
	fs := newFlagSet(errOut, &spec, &cfg, labels, annotations)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if spec.TokensSecret == "" && spec.ReaderSecret == "" && spec.RedisSecret == "" {
		return errors.New("nothing to do: name a Secret with --tokens-secret, --reader-secret or --redis-secret")
	}
	if spec.ReaderSecret != "" && spec.TokensSecret == "" {
		return errors.New("--reader-secret needs --tokens-secret: the read-only token's digest goes into the tokens file")
	}
	if len(spec.Identities) > 0 && spec.TokensSecret == "" {
		return errors.New("--identity needs --tokens-secret: the identity lines go into the tokens file")
	}
	spec.Labels, spec.Annotations = labels, annotations
	client, err := clientFor(cfg)
	if err != nil {
		return err
	}
	outcomes, err := Ensure(ctx, client, spec, generate)
	for _, o := range outcomes {
		fmt.Fprintf(out, "ensure-secrets: secret %s/%s %s\n", client.Namespace(), o.Name, o.Action)
	}
	return err
}

// clientFor makes a Client of cfg, the pod's own configuration filling in
// what it leaves empty.
func clientFor(cfg ClientConfig) (*Client, error) {
	if cfg.Server == "" {
		in, err := InClusterConfig()
		if err != nil {
			return nil, err
		}
		cfg.TokenFile = cmp.Or(cfg.TokenFile, in.TokenFile)
		cfg.CAFile = cmp.Or(cfg.CAFile, in.CAFile)
		cfg.Namespace = cmp.Or(cfg.Namespace, in.Namespace)
		cfg.Server = in.Server
	}
	return NewClient(cfg)
}

// clientFlags declares the flags of the API server's address and
// credentials into cfg.
func clientFlags(fs *flag.FlagSet, cfg *ClientConfig) {
	fs.StringVar(&cfg.Server, "server", "", "API server URL (default: the pod's, KUBERNETES_SERVICE_HOST)")
	fs.StringVar(&cfg.TokenFile, "token-file", "", "bearer token file (default: the pod's service account token)")
	fs.StringVar(&cfg.CAFile, "ca-file", "", "CA bundle of the API server (default: the pod's)")
	fs.StringVar(&cfg.Namespace, "namespace", "", "namespace of the objects (default: the pod's)")
}

// commandFlags is the flag set of a command whose help starts with usage.
func commandFlags(name, usage string, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprint(errOut, usage)
		fs.PrintDefaults()
	}
	return fs
}

// newFlagSet declares the command's flags into spec, cfg, labels and
// annotations.
func newFlagSet(errOut io.Writer, spec *Spec, cfg *ClientConfig, labels, annotations pairs) *flag.FlagSet {
	fs := commandFlags("ensure-secrets", usage, errOut)
	fs.StringVar(&spec.TokensSecret, "tokens-secret", "", "Secret of the tokens file (key tokens)")
	fs.StringVar(&spec.ReaderSecret, "reader-secret", "", "Secret of helm test's read-only token (key token); its digest joins the tokens file")
	fs.StringVar(&spec.RedisSecret, "redis-secret", "", "Secret of the Redis password")
	fs.StringVar(&spec.RedisKey, "redis-secret-key", "redis-password", "key of the Redis password in --redis-secret")
	fs.Var((*lines)(&spec.Identities), "identity", "identity line of the tokens file (repeat), kept in a block of --tokens-secret's file that each run rewrites: none removes it")
	fs.Var(labels, "label", "key=value label of the Secrets it creates (repeat)")
	fs.Var(annotations, "annotation", "key=value annotation of the Secrets it creates (repeat)")
	clientFlags(fs, cfg)
	return fs
}

// lines is a repeatable flag of whole values.
type lines []string

func (l *lines) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, "; ")
}

func (l *lines) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// pairs is a repeatable key=value flag.
type pairs map[string]string

func (p pairs) String() string {
	var s []string
	for k, v := range p {
		s = append(s, k+"="+v)
	}
	return strings.Join(s, ",")
}

func (p pairs) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", v)
	}
	p[k] = val
	return nil
}
