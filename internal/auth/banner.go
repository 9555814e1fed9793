package auth

import (
	"fmt"
	"io"
	"net"
)

// PrintDevBanner prints the development token once, with a curl line that
// creates a plant, to w (the terminal, never the log).
func PrintDevBanner(w io.Writer, token DevToken, apiAddr string) {
	host, port, err := net.SplitHostPort(apiAddr)
	if err != nil || host == "" || host == "::" || host == "0.0.0.0" {
		host = "localhost"
	}
	url := "http://" + net.JoinHostPort(host, port) + "/plants"
	fmt.Fprintf(w, `
plantstore is running in development mode. This API token is printed once and
is valid until the process exits:

  %s

Create a plant:

  curl -i -X POST %s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"id": 1, "name": "Monstera", "tag": "tropical"}'

`, token, url, token)
}
