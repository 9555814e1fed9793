package auth

import (
	"fmt"
	"io"
	"net"
)

// PrintDevBanner prints the development token once, with a curl line that
// creates a plant and, when docsPath is not empty, the URL of the API
// reference page, where the token sends requests too, to w (the terminal,
// never the log).
func PrintDevBanner(w io.Writer, token DevToken, apiAddr, docsPath string) {
	host, port, err := net.SplitHostPort(apiAddr)
	if err != nil || host == "" || host == "::" || host == "0.0.0.0" {
		host = "localhost"
	}
	base := "http://" + net.JoinHostPort(host, port)
	url := base + "/plants"
	fmt.Fprintf(w, `
plantstore is running in development mode. This API token is printed once and
is valid until the process exits:

  %s

Create a plant:

  curl -i -X POST %s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"id": 1, "name": "Monstera", "tag": "tropical"}'

`, token, url, token)
	if docsPath != "" {
		fmt.Fprintf(w, `Or open the API reference, and send requests from it with the token:

  %s

`, base+docsPath)
	}
}
