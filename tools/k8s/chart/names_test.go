package chart

import (
	"fmt"
	"strings"
	"testing"
)

// nameLimits are the kinds whose names are shorter than a DNS subdomain's
// 253: a Service's is a DNS label (63); a Job's becomes its pods' job-name
// label (63); a StatefulSet's, its pods' controller-revision-hash label with
// 11 characters more (52). Any other name stays within 63 too.
var nameLimits = map[string]int{"StatefulSet": 52}

// releaseNameOf returns a valid release name of n characters (1 to 53, as
// Helm allows), starting with prefix.
func releaseNameOf(prefix string, n int) string {
	name := strings.Repeat(prefix, 53/len(prefix)+1)[:n]
	if strings.HasSuffix(name, "-") {
		name = name[:n-1] + "z"
	}
	return name
}

// TestAnyReleaseNameWorks: with any release name Helm accepts, every object
// of every value set has a name of its own (per kind) within its kind's
// limit, and every label value within 63. A name of 36 characters made the
// Redis StatefulSet's pods' revision label too long (no pod was ever
// created), and from 52 every suffix was cut away, giving objects of one
// kind the same name.
func TestAnyReleaseNameWorks(t *testing.T) {
	// Names that hold the chart's name are its fullname as they are; others
	// get "-plantstore" after them.
	prefixes := []string{"checkout-platform-production-eu-west-1-blue-green-", "plantstore-"}
	check := func(t *testing.T, release string, set []string) {
		r, err := renderRelease(t, release, kubeVersion, set)
		if err != nil {
			t.Fatalf("release %q, %v: %v", release, set, err)
		}
		seen := map[string]string{}
		for _, o := range r.Objects {
			key := o.Kind() + "/" + o.Name()
			if prev, ok := seen[key]; ok {
				t.Errorf("release %q (%d), %v: %s from %s and from %s", release, len(release), set, key, prev, o.Source)
			}
			seen[key] = o.Source
			limit := nameLimits[o.Kind()]
			if limit == 0 {
				limit = 63
			}
			if len(o.Name()) > limit {
				t.Errorf("release %q (%d), %v: %s: name of %d characters, over %d", release, len(release), set, key, len(o.Name()), limit)
			}
			for path, v := range labelValues(o.Obj) {
				if len(v) > 63 {
					t.Errorf("release %q (%d), %v: %s: label %s of %d characters", release, len(release), set, key, path, len(v))
				}
			}
		}
	}
	// Every length with the value set that renders the most objects, and
	// the lengths where a cut begins with every value set.
	for _, prefix := range prefixes {
		for n := 1; n <= 53; n++ {
			check(t, releaseNameOf(prefix, n), []string{"ci/full-values.yaml"})
		}
		for _, set := range valueSets(t) {
			for _, n := range []int{1, 35, 36, 46, 47, 52, 53} {
				check(t, releaseNameOf(prefix, n), []string{set})
			}
		}
	}
}

// labelValues returns the values of every labels map in o, by path.
func labelValues(o map[string]any) map[string]string {
	out := map[string]string{}
	walk(o, "", func(path, key string, v any) bool {
		labels, ok := v.(map[string]any)
		if key != "labels" || !ok {
			return true
		}
		for k, v := range labels {
			out[path+"."+k] = fmt.Sprint(v)
		}
		return false
	})
	return out
}
