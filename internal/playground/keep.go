package playground

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// logTailLines is how much of the controller log a failure shows.
const logTailLines = 25

// printKeep tells how to reach what keeps running after the scenario.
func (pg *playground) printKeep(scenarioErr error) {
	w := pg.opts.Out
	kubectl := pg.cp.kubectl
	if kubectl == "" {
		kubectl = "kubectl"
	}
	ca := pg.sim.CAFile()
	fmt.Fprintln(w)
	if scenarioErr != nil {
		fmt.Fprintf(w, "The scenario failed (%v), but everything keeps running for a look.\n", scenarioErr)
	}
	fmt.Fprintln(w, "Everything keeps running; press Ctrl-C to stop it and remove it.")
	fmt.Fprintf(w, "\nKubernetes (kubeconfig %s):\n", pg.cp.kubeconfig)
	fmt.Fprintf(w, "  export KUBECONFIG=%s\n", pg.cp.kubeconfig)
	fmt.Fprintf(w, "  %s get nodes -L %s/env,%s/costcenter\n", kubectl, pg.codec.Prefix, pg.codec.Prefix)
	fmt.Fprintf(w, "  %s get nodetagsyncs; %s get events.events.k8s.io -A\n", kubectl, kubectl)
	fmt.Fprintf(w, "  %s label node %s %s=yes\n", kubectl, pg.layout.nodesOf(pg.layout.Pool2)[0].Name, pg.labelKey("demo"))
	if pg.metal != nil {
		fmt.Fprintf(w, "  %s label bmh -n %s %s %s=r8 --overwrite; %s get node %s -L %s\n",
			kubectl, metalNS, pg.layout.OnPrem.Name, rackLabel, kubectl, pg.layout.OnPrem.Name, rackLabel)
		fmt.Fprintf(w, "  %s get labelsyncprofiles -n %s\n", kubectl, metalNS)
	}
	fmt.Fprintf(w, "\nAzure (armsim at %s, CA %s; the /_admin API needs no token):\n", pg.sim.URL(), ca)
	fmt.Fprintf(w, "  curl -s --cacert %s %s/_admin/state\n", ca, pg.sim.URL())
	fmt.Fprintf(w, "  curl -s --cacert %s %s/_admin/tags -d '{\"id\":\"%s\",\"set\":{\"env\":\"qa\"}}'\n", ca, pg.sim.URL(), pg.layout.Pool1.ID)
	fmt.Fprintf(w, "  then ask for a sync now (else the next resync picks it up):\n")
	fmt.Fprintf(w, "  %s annotate nodetagsync %s %s=\"$(date +%%s)\" --overwrite\n", kubectl, syncName, v1alpha1.SyncRequestAnnotation)
	if pg.logPath != "" {
		fmt.Fprintf(w, "\nController and armsim log: %s\n", pg.logPath)
	}
}

// printLogTail shows the end of the controller log after a failure (the
// file goes away with the temporary directory).
func (pg *playground) printLogTail() {
	if pg.logPath == "" {
		return
	}
	b, err := os.ReadFile(pg.logPath)
	if err != nil || len(b) == 0 {
		return
	}
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	fmt.Fprintf(pg.opts.Out, "\nLast %d lines of the controller log (--verbose shows all of it as it happens):\n", len(lines))
	for _, l := range lines {
		fmt.Fprintln(pg.opts.Out, "  "+l)
	}
}
