// Package version reports what build this is. The linker stamps Version and
// Revision (-ldflags "-X ..."); a plain go build reports "dev".
package version

import "runtime"

var (
	// Version is the release version, such as 1.0.0.
	Version = "dev"
	// Revision is the VCS revision the binary was built from.
	Revision = "unknown"
)

// Info describes the running build.
type Info struct {
	Version   string
	Revision  string
	GoVersion string
}

// Get returns the build's Info.
func Get() Info {
	return Info{Version: Version, Revision: Revision, GoVersion: runtime.Version()}
}

// String is the line --version prints.
func (i Info) String() string {
	return "plantstore " + i.Version + " (revision " + i.Revision + ", " + i.GoVersion + ")"
}
