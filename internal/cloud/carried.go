package cloud

import (
	"time"

	"github.com/tagsync/tagsync/internal/tags"
)

// CarriedTagsTaker is a NodeProvider that keeps its reads in a cache and
// takes into it the tags a change event carried (AWS "Tag Change on
// Resource" carries the resource's whole tag set). A targeted pass that
// syncs from such tags instead of reading must hand them over first, or a
// later pass would read the cache's older tags and undo what it synced.
type CarriedTagsTaker interface {
	// TakeTags takes t, the whole tag set of the resource id (a canonical
	// ID) after a change made at, into the provider's cache, and reports
	// whether it did: only when the cache holds a read of the resource
	// made before at. Otherwise the pass reads the resource.
	TakeTags(id string, t tags.Set, at time.Time) bool
}
