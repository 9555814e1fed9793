// Package kube holds the chart's hook commands that act through the
// Kubernetes API with the hook pod's service account.
//
// `plantstore ensure-secrets` (pre-install, pre-upgrade) keeps the Secrets
// the chart generates (the API token, helm test's read-only token, the Redis
// password) as it found them, creating each one only when it is missing. The
// values are random, so they cannot be rendered by the chart itself without
// breaking `helm template` (GitOps renders twice and must get the same
// bytes), and a Secret that the chart does not render is neither rewritten by
// a sync nor deleted by an uninstall or a rollback.
//
// `plantstore roll-redis` (post-upgrade, post-rollback) restarts the
// Sentinel-mode Redis pods that run an older pod spec (rollUsage, Roll).
//
// It speaks to a few calls of the core and apps APIs with net/http:
// client-go would bring its dependency tree into go.mod and megabytes into
// the image for them.
package kube

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/tlsca"
)

// The in-cluster credentials every pod with automountServiceAccountToken
// gets (Kubernetes' "Accessing the API from a Pod").
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// callTimeout bounds one API call.
	callTimeout = 15 * time.Second
)

// ErrNotFound is a 404 of the API server; ErrConflict a 409 (the Secret
// exists already on create, or changed since it was read on update).
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// Secret is the part of a core/v1 Secret this package reads and writes.
type Secret struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   Metadata          `json:"metadata"`
	Type       string            `json:"type,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
}

// Metadata is an object's ObjectMeta, in part.
type Metadata struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	DeletionTimestamp string            `json:"deletionTimestamp,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
}

// Client calls the API server for the objects of one namespace.
type Client struct {
	server    *url.URL
	namespace string
	token     func() (string, error)
	http      *http.Client
}

// ClientConfig says where the API server is and how to authenticate; the
// zero values mean the pod's own (InClusterConfig).
type ClientConfig struct {
	Server    string // https://host:port
	TokenFile string // a bearer token, reread for every call (the kubelet rotates it)
	CAFile    string // PEM bundle of the server's CA
	Namespace string
}

// InClusterConfig is the pod's: KUBERNETES_SERVICE_HOST and _PORT, and its
// service account's token, CA and namespace.
func InClusterConfig() (ClientConfig, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return ClientConfig{}, errors.New("not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	}
	ns, err := os.ReadFile(serviceAccountDir + "/namespace")
	if err != nil {
		return ClientConfig{}, fmt.Errorf("the pod's namespace: %w (is automountServiceAccountToken false?)", err)
	}
	return ClientConfig{
		Server:    "https://" + net.JoinHostPort(host, port),
		TokenFile: serviceAccountDir + "/token",
		CAFile:    serviceAccountDir + "/ca.crt",
		Namespace: strings.TrimSpace(string(ns)),
	}, nil
}

// NewClient makes a Client from a configuration.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("API server %q: want https://host:port", cfg.Server)
	}
	if cfg.Namespace == "" {
		return nil, errors.New("no namespace")
	}
	pool, err := tlsca.Pool(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	transport.Proxy = nil // in-cluster calls never go through a proxy
	tokenFile := cfg.TokenFile
	return &Client{
		server:    u,
		namespace: cfg.Namespace,
		token: func() (string, error) {
			b, err := os.ReadFile(tokenFile)
			if err != nil {
				return "", fmt.Errorf("service account token: %w", err)
			}
			return strings.TrimSpace(string(b)), nil
		},
		http: &http.Client{Transport: transport, Timeout: callTimeout},
	}, nil
}

// Namespace is the namespace the client works in.
func (c *Client) Namespace() string { return c.namespace }

// Get reads a Secret; ErrNotFound when there is none.
func (c *Client) Get(ctx context.Context, name string) (*Secret, error) {
	return object[Secret](ctx, c, "get secret", name, http.MethodGet, c.path("", "secrets", name), "", nil)
}

// Create creates a Secret; ErrConflict when one of that name exists.
func (c *Client) Create(ctx context.Context, s *Secret) (*Secret, error) {
	s.APIVersion, s.Kind, s.Metadata.Namespace = "v1", "Secret", c.namespace
	return object[Secret](ctx, c, "create secret", s.Metadata.Name, http.MethodPost, c.path("", "secrets", ""), "application/json", s)
}

// Update replaces a Secret read by Get; ErrConflict when it changed since.
func (c *Client) Update(ctx context.Context, s *Secret) (*Secret, error) {
	return object[Secret](ctx, c, "update secret", s.Metadata.Name, http.MethodPut, c.path("", "secrets", s.Metadata.Name), "application/json", s)
}

// Annotate merges annotations into a Secret's (a JSON merge patch).
func (c *Client) Annotate(ctx context.Context, name string, annotations map[string]string) error {
	patch := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	return c.do(ctx, "annotate secret", name, http.MethodPatch, c.path("", "secrets", name), "application/merge-patch+json", patch, nil)
}

// StatefulSet is the part of an apps/v1 StatefulSet the roll reads.
type StatefulSet struct {
	Metadata Metadata `json:"metadata"`
	Spec     struct {
		Replicas       int `json:"replicas"`
		UpdateStrategy struct {
			Type string `json:"type"`
		} `json:"updateStrategy"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64  `json:"observedGeneration"`
		UpdateRevision     string `json:"updateRevision"`
	} `json:"status"`
}

// Pod is the part of a core/v1 Pod the roll reads.
type Pod struct {
	Metadata Metadata `json:"metadata"`
	Status   struct {
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// Ready is whether the pod is Ready and not being deleted.
func (p *Pod) Ready() bool {
	if p.Metadata.DeletionTimestamp != "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// StatefulSet reads a StatefulSet.
func (c *Client) StatefulSet(ctx context.Context, name string) (*StatefulSet, error) {
	return object[StatefulSet](ctx, c, "get statefulset", name, http.MethodGet, c.path("apps", "statefulsets", name), "", nil)
}

// Pod reads a Pod; ErrNotFound when there is none.
func (c *Client) Pod(ctx context.Context, name string) (*Pod, error) {
	return object[Pod](ctx, c, "get pod", name, http.MethodGet, c.path("", "pods", name), "", nil)
}

// DeletePod deletes the Pod of that name if it is still the one of that
// UID (ErrConflict otherwise), gracefully: its preStop hook runs.
func (c *Client) DeletePod(ctx context.Context, name, uid string) error {
	opts := map[string]any{"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": map[string]string{"uid": uid}}
	return c.do(ctx, "delete pod", name, http.MethodDelete, c.path("", "pods", name), "application/json", opts, nil)
}

// status is the API server's error body (metav1.Status), in part.
type status struct {
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

// path is the URL path of a namespaced resource of an API group ("" for
// core), or of one object of it when name is set.
func (c *Client) path(group, resource, name string) string {
	p := "/api/v1"
	if group != "" {
		p = "/apis/" + group + "/v1"
	}
	p += "/namespaces/" + url.PathEscape(c.namespace) + "/" + resource
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// object is do for a call that answers an object, decoded into a new T.
func object[T any](ctx context.Context, c *Client, what, name, method, path, contentType string, in any) (*T, error) {
	var out T
	if err := c.do(ctx, what, name, method, path, contentType, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// do sends one call about the object name; its error says what it did
// (what, e.g. "get secret") to which object.
func (c *Client) do(ctx context.Context, what, name, method, path, contentType string, in, out any) error {
	if err := c.send(ctx, method, path, contentType, in, out); err != nil {
		return fmt.Errorf("%s %s/%s: %w", what, c.namespace, name, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path, contentType string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server.JoinPath(path).String(), body)
	if err != nil {
		return err
	}
	token, err := c.token()
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var st status
		_ = json.Unmarshal(raw, &st)
		msg := st.Message
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		switch resp.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %s", ErrNotFound, msg)
		case http.StatusConflict:
			return fmt.Errorf("%w: %s", ErrConflict, msg)
		}
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("decode the answer: %w", err)
		}
	}
	return nil
}
