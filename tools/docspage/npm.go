package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// npm is the registry npm is configured with, through the npm client: its
// registry, proxy and CA settings apply, and no host is written here.
type npm struct{}

func (npm) resolve(pkg, version string) (string, string, error) {
	out, err := runNPM("view", pkg+"@"+version, "version", "dist.integrity", "--json")
	if err != nil {
		return "", "", err
	}
	var v struct {
		Version   string `json:"version"`
		Integrity string `json:"dist.integrity"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		// A range that several versions satisfy lists them all.
		return "", "", fmt.Errorf("npm view: %w (give one version)", err)
	}
	if v.Version == "" || v.Integrity == "" {
		return "", "", fmt.Errorf("npm view printed no version and integrity: %s", out)
	}
	return v.Version, v.Integrity, nil
}

func (npm) tarball(pkg, version string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "docspage-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out, err := runNPM("pack", pkg+"@"+version, "--json", "--pack-destination", dir)
	if err != nil {
		return nil, err
	}
	var packed []struct {
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
		return nil, fmt.Errorf("npm pack printed %s (%v)", out, err)
	}
	return os.ReadFile(filepath.Join(dir, filepath.Base(packed[0].Filename)))
}

func runNPM(args ...string) ([]byte, error) {
	cmd := exec.Command("npm", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("npm %v: %w\n%s", args, err, stderr.Bytes())
	}
	return out, nil
}
