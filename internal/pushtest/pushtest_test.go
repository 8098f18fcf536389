package pushtest_test

import (
	"crypto/ecdh"
	"encoding/base64"
	"testing"

	"github.com/feedd/feedd/internal/pushtest"
)

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRFC8291Vector: the browser's side decrypts the message of RFC 8291,
// section 5 (Appendix A's intermediate values lead to it), and refuses
// it with one byte changed or with another auth secret.
func TestRFC8291Vector(t *testing.T) {
	key, err := ecdh.P256().NewPrivateKey(b64(t, "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"))
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()); got != "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4" {
		t.Fatalf("ua_public %s", got)
	}
	b := &pushtest.Browser{Key: key, Auth: b64(t, "BTBZMqHH6r4Tts7J_aSIgg")}
	body := b64(t, "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
	got, err := b.Decrypt(body)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "When I grow up, I want to be a watermelon" {
		t.Fatalf("plaintext %q", got)
	}
	bad := append([]byte(nil), body...)
	bad[len(bad)-1] ^= 1
	if _, err := b.Decrypt(bad); err == nil {
		t.Fatal("a changed byte decrypted")
	}
	other := &pushtest.Browser{Key: key, Auth: make([]byte, 16)}
	if _, err := other.Decrypt(body); err == nil {
		t.Fatal("another auth secret decrypted")
	}
}
