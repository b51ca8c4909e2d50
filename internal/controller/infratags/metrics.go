package infratags

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// invalidTotal counts Infrastructure tag sets refused by the installer's
// rules, by cloud.
var invalidTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "tagsync", Subsystem: "infratags", Name: "invalid_user_tags_total",
	Help: "Infrastructure user-tag sets refused by the OpenShift installer's rules (nothing of them applied), by cloud.",
}, []string{"cloud"})

func init() { crmetrics.Registry.MustRegister(invalidTotal) }
