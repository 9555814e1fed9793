package chart

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// jwtKubernetes turns the cluster's service-account issuer on.
var jwtKubernetes = map[string]any{"auth": map[string]any{"jwt": map[string]any{"kubernetes": map[string]any{"enabled": true}}}}

// api returns the API container of a render.
func api(t testing.TB, r rendered) map[string]any {
	t.Helper()
	c := container(podSpec(r.get(t, "Deployment", "plantstore")), "plantstore")
	if c == nil {
		t.Fatal("no plantstore container")
	}
	return c
}

// Without an issuer nothing of JWT is rendered: no ConfigMap, volume, mount,
// variable or annotation, in every value set that sets none.
func TestJWTDefaultsRenderNothing(t *testing.T) {
	for _, set := range append([]string{""}, valueSets(t)...) {
		files := filesOf(set)
		if v := userValues(t, files); dig(v, "auth", "jwt", "kubernetes", "enabled") == true || len(list(v, "auth", "jwt", "issuers")) > 0 {
			continue
		}
		r := mustRender(t, files)
		for _, word := range []string{"jwt-issuers", "PLANTSTORE_AUTH_JWT", "name: jwt", "--identity", "kube-root-ca.crt", "serviceAccountToken"} {
			if strings.Contains(r.Manifest, word) {
				t.Errorf("%q: the render mentions %q", set, word)
			}
		}
	}
}

// The cluster's issuer: the issuers file's line names the projected token and
// CA as the bearer and roots of the discovery and key set requests, and the
// API server's key set; the pods mount both, read-only, get the variables and
// roll when the file changes; their automounted token stays off.
func TestJWTKubernetesIssuer(t *testing.T) {
	r := mustRender(t, nil, jwtKubernetes)
	const want = "# JWT issuers from the chart's auth.jwt values: the issuer URL (the tokens' iss), then attributes, a line.\n" +
		"https://kubernetes.default.svc.cluster.local audience=plantstore" +
		" ca-file=/var/run/secrets/plantstore/kubernetes/ca.crt" +
		" discovery-token-file=/var/run/secrets/plantstore/kubernetes/token" +
		" jwks-url=https://kubernetes.default.svc.cluster.local/openid/v1/jwks\n"
	issuers := issuersFile(t, r)
	wantEqual(t, "issuers file", issuers, want)

	deploy := r.get(t, "Deployment", "plantstore")
	sum := sha256.Sum256([]byte(issuers))
	wantEqual(t, "checksum/jwt-issuers (the sha256 of the ConfigMap's file)", str(deploy.Obj, "spec", "template", "metadata", "annotations", "checksum/jwt-issuers"), hex.EncodeToString(sum[:]))
	spec := podSpec(deploy)
	wantEqual(t, "automountServiceAccountToken", spec["automountServiceAccountToken"], false)
	c := api(t, r)
	env := envOf(c)
	for k, v := range map[string]string{
		"PLANTSTORE_AUTH_JWT_ISSUERS_FILE":         "/etc/plantstore/jwt/issuers",
		"PLANTSTORE_AUTH_JWT_LEEWAY":               "30s",
		"PLANTSTORE_AUTH_JWT_REFRESH_INTERVAL":     "15m",
		"PLANTSTORE_AUTH_JWT_REFRESH_MIN_INTERVAL": "10s",
		"PLANTSTORE_AUTH_JWT_TIMEOUT":              "5s",
		"PLANTSTORE_AUTH_JWT_CACHE_SIZE":           "10000",
	} {
		wantEqual(t, k, env[k], v)
	}
	mounts := list(c, "volumeMounts")
	for name, path := range map[string]string{"jwt": "/etc/plantstore/jwt", "jwt-kubernetes": "/var/run/secrets/plantstore/kubernetes"} {
		m := byName(mounts, name)
		if m == nil || m["mountPath"] != path || m["readOnly"] != true || m["subPath"] != nil {
			t.Errorf("mount %s: %v, want %s read-only", name, m, path)
		}
	}
	wantKube := fromYAML(t, `
name: jwt-kubernetes
projected:
  sources:
    - serviceAccountToken:
        path: token
        expirationSeconds: 3600
    - configMap:
        name: kube-root-ca.crt
        items:
          - key: ca.crt
            path: ca.crt
`)
	wantEqual(t, "jwt-kubernetes volume (no audience: the API server's own)", byName(list(spec, "volumes"), "jwt-kubernetes"), wantKube)
	wantIssuers := fromYAML(t, `
name: jwt
projected:
  sources:
    - configMap:
        name: plantstore-jwt-issuers
        items:
          - key: issuers
            path: issuers
`)
	wantEqual(t, "jwt volume", byName(list(spec, "volumes"), "jwt"), wantIssuers)

	// Another audience, a key set URL of its own and other timings: the file
	// and its checksum follow, and so do the variables.
	r2 := mustRender(t, nil, map[string]any{"auth": map[string]any{"jwt": map[string]any{
		"kubernetes": map[string]any{"enabled": true, "issuer": "https://oidc.example.com/cluster/", "audience": "shop", "jwksURL": "https://10.0.0.1/openid/v1/jwks"},
		"leeway":     "1m", "refreshInterval": "1h", "refreshMinInterval": "30s", "timeout": "2s", "cacheSize": 50,
	}}})
	issuers2 := issuersFile(t, r2)
	if !strings.Contains(issuers2, "\nhttps://oidc.example.com/cluster/ audience=shop ca-file=") || !strings.HasSuffix(issuers2, " jwks-url=https://10.0.0.1/openid/v1/jwks\n") {
		t.Errorf("issuers file:\n%s", issuers2)
	}
	sum2 := str(r2.get(t, "Deployment", "plantstore").Obj, "spec", "template", "metadata", "annotations", "checksum/jwt-issuers")
	if sum2 == hex.EncodeToString(sum[:]) {
		t.Error("the checksum did not change with the issuers file")
	}
	env2 := envOf(api(t, r2))
	for k, v := range map[string]string{"LEEWAY": "1m", "REFRESH_INTERVAL": "1h", "REFRESH_MIN_INTERVAL": "30s", "TIMEOUT": "2s", "CACHE_SIZE": "50"} {
		wantEqual(t, "PLANTSTORE_AUTH_JWT_"+k, env2["PLANTSTORE_AUTH_JWT_"+k], v)
	}
	// The default issuer's key set is its own, with a trailing slash or not.
	r3 := mustRender(t, nil, map[string]any{"auth": map[string]any{"jwt": map[string]any{"kubernetes": map[string]any{"enabled": true, "issuer": "https://oidc.example.com/cluster/"}}}})
	if got := issuersFile(t, r3); !strings.HasSuffix(got, " jwks-url=https://oidc.example.com/cluster/openid/v1/jwks\n") {
		t.Errorf("issuers file:\n%s", got)
	}
}

// Other issuers: a line each; a caConfigMap's bundle is projected beside the
// file and named as the issuer's ca-file; no token of the cluster is mounted.
func TestJWTOtherIssuers(t *testing.T) {
	r := mustRender(t, nil, fromYAML(t, `
auth:
  jwt:
    issuers:
      - url: https://accounts.example.com
        audience: plantstore
      - url: https://dex.example.com/dex
        audience: shop
        jwksURL: https://dex.example.com/dex/keys
        caConfigMap:
          name: dex-ca
          key: bundle.pem
      - url: https://idp.internal
        audience: plantstore
        caConfigMap:
          name: idp-ca
`))
	const want = "# JWT issuers from the chart's auth.jwt values: the issuer URL (the tokens' iss), then attributes, a line.\n" +
		"https://accounts.example.com audience=plantstore\n" +
		"https://dex.example.com/dex audience=shop ca-file=/etc/plantstore/jwt/ca-1.crt jwks-url=https://dex.example.com/dex/keys\n" +
		"https://idp.internal audience=plantstore ca-file=/etc/plantstore/jwt/ca-2.crt\n"
	wantEqual(t, "issuers file", issuersFile(t, r), want)
	spec := podSpec(r.get(t, "Deployment", "plantstore"))
	wantVolume := fromYAML(t, `
name: jwt
projected:
  sources:
    - configMap:
        name: plantstore-jwt-issuers
        items:
          - key: issuers
            path: issuers
    - configMap:
        name: dex-ca
        items:
          - key: bundle.pem
            path: ca-1.crt
    - configMap:
        name: idp-ca
        items:
          - key: ca.crt
            path: ca-2.crt
`)
	wantEqual(t, "jwt volume", byName(list(spec, "volumes"), "jwt"), wantVolume)
	if byName(list(spec, "volumes"), "jwt-kubernetes") != nil || strings.Contains(r.Manifest, "serviceAccountToken") {
		t.Error("a service-account token is projected without auth.jwt.kubernetes")
	}
	wantEqual(t, "PLANTSTORE_AUTH_JWT_ISSUERS_FILE", envOf(api(t, r))["PLANTSTORE_AUTH_JWT_ISSUERS_FILE"], "/etc/plantstore/jwt/issuers")
}

// identitiesValues are two identities of the cluster's issuer and one of
// another.
const identitiesValues = `
auth:
  jwt:
    kubernetes:
      enabled: true
    issuers:
      - url: https://dex.example.com/dex
        audience: plantstore
  identities:
    - serviceAccount: shop/orders
      name: orders
      scopes: [plants:write]
      rate: 10/s
      burst: 20
    - subject: system:serviceaccount:shop:reports
      claim: aud:plantstore
      name: reports
      scopes: [plants:read]
    - issuer: https://dex.example.com/dex
      claim: groups:shop-admins
      name: admins
`

var identityLines = []string{
	"issuer=https://kubernetes.default.svc.cluster.local subject=system:serviceaccount:shop:orders name=orders scopes=plants:write rate=10/s burst=20",
	"issuer=https://kubernetes.default.svc.cluster.local subject=system:serviceaccount:shop:reports claim=aud:plantstore name=reports scopes=plants:read",
	"issuer=https://dex.example.com/dex claim=groups:shop-admins name=admins",
}

// With auth.tokens the identity lines follow the tokens in the Secret the
// chart renders, whose checksum the pods carry.
func TestJWTIdentitiesInTheRenderedSecret(t *testing.T) {
	values := fromYAML(t, identitiesValues)
	values["auth"].(map[string]any)["tokens"] = []any{"sha256:" + strings.Repeat("ab", 32) + " name=ci"}
	r := mustRender(t, nil, values)
	b, err := base64.StdEncoding.DecodeString(str(r.get(t, "Secret", "plantstore-tokens").Obj, "data", "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# API tokens from the chart's auth.tokens value: a token or sha256:<hex>, then attributes, a line.\n" +
		"sha256:" + strings.Repeat("ab", 32) + " name=ci\n" +
		"# JWT callers mapped to clients, from the chart's auth.identities value.\n" +
		strings.Join(identityLines, "\n") + "\n"
	wantEqual(t, "tokens file", string(b), want)
	sum := sha256.Sum256(b)
	wantEqual(t, "checksum/tokens (the sha256 of the Secret's file)", str(r.get(t, "Deployment", "plantstore").Obj, "spec", "template", "metadata", "annotations", "checksum/tokens"), hex.EncodeToString(sum[:]))
	if job := r.lookup("Job", "plantstore-secrets"); job != nil && strings.Contains(job.Text, "--identity") {
		t.Error("the secrets Job got the identities although the chart renders the tokens file")
	}
}

// With the generated token the secrets Job keeps the identity lines in the
// file it generated (ensure-secrets --identity), in order; the chart renders
// no tokens Secret, which would replace the token.
func TestJWTIdentitiesBesideTheGeneratedToken(t *testing.T) {
	r := mustRender(t, nil, fromYAML(t, identitiesValues))
	if r.lookup("Secret", "plantstore-tokens") != nil {
		t.Fatal("the chart renders the tokens Secret: the generated token would be replaced")
	}
	job := r.get(t, "Job", "plantstore-secrets")
	var got []string
	for _, a := range list(list(podSpec(job), "containers")[0].(map[string]any), "args") {
		if s := a.(string); strings.HasPrefix(s, "--identity=") {
			got = append(got, strings.TrimPrefix(s, "--identity="))
		}
	}
	wantEqual(t, "--identity lines", got, identityLines)
}

// What the service would refuse, or what would silently match no token, fails
// the render with what to change; the schema refuses malformed values.
func TestJWTRefused(t *testing.T) {
	kube := "auth:\n  jwt:\n    kubernetes:\n      enabled: true\n"
	for name, c := range map[string]struct{ values, want string }{
		"identity without name": {kube + "  identities:\n    - serviceAccount: shop/orders\n",
			"auth.identities[0]: name is required"},
		"serviceAccount and subject": {kube + "  identities:\n    - {name: a, serviceAccount: shop/orders, subject: x}\n",
			"auth.identities[0] (name a): serviceAccount and subject exclude each other"},
		"no subject, no claim": {kube + "  identities:\n    - {name: a, scopes: [plants:read]}\n",
			"auth.identities[0] (name a): needs serviceAccount (<namespace>/<name>) or subject, or a claim"},
		"serviceAccount without namespace": {kube + "  identities:\n    - {name: a, serviceAccount: orders}\n",
			"auth.identities.0.serviceAccount: Does not match pattern"},
		"burst without rate": {kube + "  identities:\n    - {name: a, subject: x, burst: 5}\n",
			"auth.identities[0] (name a): burst needs rate"},
		"issuer not configured": {"auth:\n  identities:\n    - {name: a, serviceAccount: shop/orders}\n",
			"auth.identities[0] (name a): its issuer https://kubernetes.default.svc.cluster.local is not configured"},
		"existingSecret": {kube + "  existingSecret: my-tokens\n  identities:\n    - {name: a, serviceAccount: shop/orders}\n",
			"auth.identities needs a tokens Secret the chart manages, but auth.existingSecret is set"},
		"issuer twice": {kube + "    issuers:\n      - {url: https://kubernetes.default.svc.cluster.local, audience: x}\n",
			"auth.jwt.issuers[0]: the issuer https://kubernetes.default.svc.cluster.local is configured twice"},
		"min refresh above refresh": {kube + "    refreshInterval: 1m\n    refreshMinInterval: 2m\n",
			"auth.jwt.refreshMinInterval (2m) must not exceed auth.jwt.refreshInterval (1m)"},
		"leeway above 5m": {kube + "    leeway: 6m\n", "auth.jwt.leeway (6m) must be at most 5m"},
		"zero timeout":    {kube + "    timeout: \"0\"\n", "auth.jwt.timeout must be positive"},
		"http issuer": {"auth:\n  jwt:\n    issuers:\n      - {url: http://dex.example.com, audience: x}\n",
			"auth.jwt.issuers.0.url: Does not match pattern"},
		"issuer without audience": {"auth:\n  jwt:\n    issuers:\n      - {url: https://dex.example.com}\n",
			"audience is required"},
		"expires on an identity": {kube + "  identities:\n    - {name: a, subject: x, expires: \"2030-01-01T00:00:00Z\"}\n",
			"Additional property expires is not allowed"},
	} {
		t.Run(name, func(t *testing.T) {
			mustFail(t, []string{c.want}, nil, fromYAML(t, c.values))
		})
	}
}

// With NetworkPolicies the API pods reach the API server for the cluster
// issuer's keys: its ports, anywhere unless cidrs are given; nothing of it
// without the cluster issuer.
func TestJWTNetworkPolicyReachesTheAPIServer(t *testing.T) {
	np := map[string]any{"networkPolicy": map[string]any{"enabled": true, "allowExternalEgress": false}}
	rule := func(r rendered) map[string]any {
		for _, e := range each(r.get(t, "NetworkPolicy", "plantstore").Obj, "spec", "egress") {
			if hasPort(list(e, "ports"), 6443) {
				return e
			}
		}
		return nil
	}
	if rule(mustRender(t, nil, np)) != nil {
		t.Error("an egress rule to the API server without auth.jwt.kubernetes")
	}
	want := fromYAML(t, `
ports:
  - {port: 443, protocol: TCP}
  - {port: 6443, protocol: TCP}
  - {port: 8443, protocol: TCP}
`)
	wantEqual(t, "egress rule", rule(mustRender(t, nil, np, jwtKubernetes)), want)
	want = fromYAML(t, `
ports:
  - {port: 6443, protocol: TCP}
to:
  - ipBlock: {cidr: 172.18.0.2/32}
`)
	cidrs := fromYAML(t, "networkPolicy:\n  egress:\n    kubeAPIServer:\n      ports: [6443]\n      cidrs: [172.18.0.2/32]\n")
	wantEqual(t, "egress rule with cidrs", rule(mustRender(t, nil, np, jwtKubernetes, cidrs)), want)
}

// helm test picks the first raw token with plants:write from the tokens
// file, and the install notes' command the first raw token: never an
// identity line, which has no token.
func TestTokenPicksSkipIdentityLines(t *testing.T) {
	if _, err := exec.LookPath("awk"); err != nil {
		t.Fatalf("awk, which the chart's test pod runs, is not here: %v", err)
	}
	r := mustRender(t, nil)
	var script string
	for _, p := range r.find("Pod") {
		script = p.Text
	}
	m := regexp.MustCompile(`token=\$\(awk '([^']+)'`).FindStringSubmatch(script)
	if m == nil {
		t.Fatal("no awk program in the test pod's script")
	}
	file := "# a comment\nsha256:" + strings.Repeat("ab", 32) + " name=ci\n" + strings.Join(identityLines, "\n") + "\nclaim=groups:x issuer=https://dex.example.com/dex name=b\nraw-token name=writer\n"
	cmd := exec.Command("awk", m[1])
	cmd.Stdin = strings.NewReader(file)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "the test's token", strings.TrimSpace(string(out)), "raw-token")

	// The install notes' command likewise.
	notes := mustRender(t, nil, fromYAML(t, identitiesValues)).Notes
	m = regexp.MustCompile(`grep -v -E '([^']+)'`).FindStringSubmatch(notes)
	if m == nil {
		t.Fatalf("no grep in the notes:\n%s", notes)
	}
	cmd = exec.Command("sh", "-c", "grep -v -E \"$0\" | head -n 1 | cut -d' ' -f1", m[1])
	cmd.Stdin = strings.NewReader(file)
	if out, err = cmd.Output(); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "the notes' token", strings.TrimSpace(string(out)), "raw-token")
	wantContains(t, "the notes", notes, "JWT callers: 3 identities from auth.identities", "projected service-account token of audience plantstore")
}

// issuersFile is the issuers file of the ConfigMap, with the last line break
// that the render tests' parse (as Helm's split of a manifest) trims.
func issuersFile(t testing.TB, r rendered) string {
	t.Helper()
	return strings.TrimSuffix(str(r.get(t, "ConfigMap", "plantstore-jwt-issuers").Obj, "data", "issuers"), "\n") + "\n"
}
