// Command oidcprovider is the OpenID provider of feedd's single sign-on
// tests: zitadel/oidc's OpenID Certified provider (package op), wired with
// the in-memory storage of its example, on a free loopback port. It is a
// module of its own, so that feedd's go.mod holds none of its
// dependencies; the test command builds it (internal/testenv,
// OIDCProvider).
//
// Usage: oidcprovider -client ID -secret SECRET -redirect URL
//
// It prints its issuer URL on the first line of its output, then serves
// until killed. One user signs in: test-user@127.0.0.1, password
// verysecure (the example's).
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

func main() {
	client := flag.String("client", "feedd", "the client id")
	secret := flag.String("secret", "", "the client secret")
	redirect := flag.String("redirect", "", "the client's redirect URI")
	flag.Parse()
	if *secret == "" || *redirect == "" {
		fmt.Fprintln(os.Stderr, "oidcprovider: -secret and -redirect are required")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "oidcprovider:", err)
		os.Exit(1)
	}
	issuer := fmt.Sprintf("http://%s/", ln.Addr())
	storage.RegisterClients(storage.WebClient(*client, *secret, *redirect))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	router := exampleop.SetupServer(issuer, storage.NewStorage(storage.NewUserStore(issuer)), log, false)
	fmt.Println(issuer)
	if err := http.Serve(ln, router); err != nil {
		fmt.Fprintln(os.Stderr, "oidcprovider:", err)
		os.Exit(1)
	}
}
