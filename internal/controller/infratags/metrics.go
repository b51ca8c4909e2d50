package infratags

import tagmetrics "github.com/tagsync/tagsync/internal/metrics"

// invalidTotal counts Infrastructure tag sets refused by the installer's
// rules, by cloud.
var invalidTotal = tagmetrics.Subsystem(ControllerName).Counter("invalid_user_tags_total",
	"Infrastructure user-tag sets refused by the OpenShift installer's rules (nothing of them applied), by cloud.", "cloud")
