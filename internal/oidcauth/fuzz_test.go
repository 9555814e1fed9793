package oidcauth

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/oidcauth/oidcauthtest"
)

// FuzzVerify feeds arbitrary bearer tokens to the verifier of one issuer
// (its keys fetched once, a test clock that never lets it fetch again). It
// never panics; a token without exactly two dots is ErrNotJWT; it accepts
// only the tokens the issuer signed; every other answer is a rejection from
// a small set of fixed messages, which never quote the token.
func FuzzVerify(f *testing.F) {
	iss := oidcauthtest.Start(f)
	valid := iss.Sign(f, iss.Claims("system:serviceaccount:shop:orders", audience))
	other := iss.Sign(f, iss.Claims("someone", audience))
	pemHMAC, derHMAC := iss.SignHMACWithPublicKey(f, iss.Claims("x", audience))
	parts := strings.Split(valid, ".")
	for _, seed := range []string{valid, other, pemHMAC, derHMAC, iss.Unsigned(f, iss.Claims("x", audience)),
		iss.SignUnpublished(f, iss.Claims("x", audience)), "", ".", "..", "a.b.c", parts[0] + ".." + parts[2],
		parts[0] + "." + parts[1] + ".", parts[0] + "." + parts[2] + "." + parts[1], valid + "=", "e30.e30.e30",
		"eyJhbGciOiJSUzI1NiJ9.e30.", strings.Repeat("A.", 3)} {
		f.Add(seed)
	}
	v, _ := newTestVerifier(f, testOptions(issuerOptions(iss)))
	if _, err := v.Verify(context.Background(), valid); err != nil {
		f.Fatalf("the valid token: %v", err)
	}
	messages := map[string]bool{}
	f.Fuzz(func(t *testing.T, token string) {
		id, err := v.Verify(context.Background(), token)
		if strings.Count(token, ".") != 2 {
			if !errors.Is(err, auth.ErrNotJWT) || id != nil {
				t.Fatalf("%q: %v, want ErrNotJWT", token, err)
			}
			return
		}
		if err == nil {
			if token != valid && token != other {
				t.Fatalf("%q accepted as %+v: a token the issuer did not sign", token, id)
			}
			return
		}
		var r *auth.TokenRejectedError
		if !errors.As(err, &r) {
			t.Fatalf("%q: %v, want a rejection (the keys are cached)", token, err)
		}
		if len(token) > 3 && strings.Contains(r.Message, token) {
			t.Fatalf("the message %q quotes the token", r.Message)
		}
		messages[r.Message] = true
		if len(messages) > 16 {
			t.Fatalf("%d distinct messages: a message depends on the token: %v", len(messages), messages)
		}
	})
}
