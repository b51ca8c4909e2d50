package infratags

import "github.com/tagsync/tagsync/internal/controller/kit"

// invalidTotal counts Infrastructure tag sets refused by the installer's
// rules, by cloud.
var invalidTotal = kit.Metrics(ControllerName).Counter("invalid_user_tags_total",
	"Infrastructure user-tag sets refused by the OpenShift installer's rules (nothing of them applied), by cloud.", "cloud")
