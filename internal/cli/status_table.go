package cli

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// table is one section of the status output: a header and rows of cells.
type table struct {
	columns []string
	rows    [][]string
}

// add appends a row.
func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// print writes the table with cli-runtime's table printer (kubectl's
// layout), coloured when colour is set; an empty table prints nothing.
func (t *table) print(w io.Writer, colour bool) error {
	if len(t.rows) == 0 {
		return nil
	}
	mt := &metav1.Table{}
	for _, c := range t.columns {
		mt.ColumnDefinitions = append(mt.ColumnDefinitions, metav1.TableColumnDefinition{Name: c, Type: "string"})
	}
	for _, r := range t.rows {
		cells := make([]any, len(r))
		for i, c := range r {
			cells[i] = c
		}
		mt.Rows = append(mt.Rows, metav1.TableRow{Cells: cells})
	}
	var buf bytes.Buffer
	if err := printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(mt, &buf); err != nil {
		return err
	}
	out := buf.String()
	if colour {
		out = colourTable(out, t.columns)
	}
	_, err := io.WriteString(w, out)
	return err
}

// condition returns the status of condition typ ("True", "False",
// "Unknown"), or "-" when the object has none yet.
func condition(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return string(c.Status)
		}
	}
	return "-"
}

// healthyStatus is the status of a condition type when all is well:
// True, but False for the conditions that report trouble when True
// (Degraded, Conflict, AuditFailing, Suspended, DeletionsHeld).
func healthyStatus(typ string) metav1.ConditionStatus {
	switch typ {
	case v1alpha1.ConditionDegraded, v1alpha1.ConditionConflict, v1alpha1.ConditionAuditFailing,
		v1alpha1.ConditionSuspended, v1alpha1.ConditionDeletionsHeld:
		return metav1.ConditionFalse
	}
	return metav1.ConditionTrue
}

// since renders how long ago t was, as kubectl's AGE column does; "-" for
// a zero or absent time.
func since(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// num renders a count.
func num(n int32) string { return strconv.Itoa(int(n)) }

// withNamespace prepends the namespace cell when all namespaces are shown.
func withNamespace(all bool, ns string, cells ...string) []string {
	if all {
		return append([]string{ns}, cells...)
	}
	return cells
}

// columnsFor prepends NAMESPACE when all namespaces are shown.
func columnsFor(all bool, cols ...string) []string {
	if all {
		return append([]string{"NAMESPACE"}, cols...)
	}
	return cols
}

// joinOr joins names, or "-" when there are none.
func joinOr(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

// objectName names an object for the detail tables: "Kind name" or
// "Kind namespace/name".
func objectName(kind, ns, name string) string {
	if ns == "" {
		return fmt.Sprintf("%s %s", kind, name)
	}
	return fmt.Sprintf("%s %s/%s", kind, ns, name)
}
