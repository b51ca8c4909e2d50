package azure

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// fullTags returns armsim.MaxTags tags t00, t01, ...
func fullTags() map[string]string {
	out := map[string]string{}
	for i := range armsim.MaxTags {
		out[fmt.Sprintf("t%02d", i)] = "v"
	}
	return out
}

// TestErrorKinds: ARM's refusals reach the caller as errors that report
// their cloud kind to errors.Is, still unwrap to *azcore.ResponseError and
// read as one line naming the resource and ARM's answer.
func TestErrorKinds(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	vm := env.vm("rg", armsim.VirtualMachine{Name: "vm", Tags: fullTags()})
	ghost := VirtualMachineResourceID(sub, "rg", "ghost")
	kinds := []error{cloud.ErrThrottled, cloud.ErrForbidden, cloud.ErrNotFound, cloud.ErrTooManyTags}
	for _, c := range []struct {
		name   string
		fault  *armsim.Fault
		id     string
		patch  tags.Patch
		kind   error // nil: none of kinds
		status int
		code   string
	}{
		{name: "forbidden", id: vm, patch: tags.Patch{Set: tags.Set{"t00": "w"}},
			fault: &armsim.Fault{Operation: "VirtualMachines.Get", Count: 1, Status: http.StatusForbidden, Code: "AuthorizationFailed",
				Message: "The client does not have authorization to perform action 'Microsoft.Compute/virtualMachines/read'."},
			kind: cloud.ErrForbidden, status: http.StatusForbidden, code: "AuthorizationFailed"},
		{name: "not found", id: ghost, patch: tags.Patch{Set: tags.Set{"a": "b"}},
			kind: cloud.ErrNotFound, status: http.StatusNotFound, code: "ResourceNotFound"},
		{name: "too many tags", id: vm, patch: tags.Patch{Set: tags.Set{"one-too-many": "x"}},
			kind: cloud.ErrTooManyTags, status: http.StatusBadRequest, code: armsim.CodeTooManyTags},
		{name: "throttled", id: vm, patch: tags.Patch{Set: tags.Set{"t00": "w"}},
			fault: &armsim.Fault{Operation: "Tags.UpdateAtScope", Count: 1, Status: http.StatusTooManyRequests, RetryAfter: 100 * time.Second},
			kind:  cloud.ErrThrottled, status: http.StatusTooManyRequests, code: "SubscriptionRequestsThrottled"},
		{name: "unavailable with Retry-After", id: vm, patch: tags.Patch{Set: tags.Set{"t00": "w"}},
			fault: &armsim.Fault{Operation: "Tags.UpdateAtScope", Count: 1, Status: http.StatusServiceUnavailable, RetryAfter: 100 * time.Second},
			kind:  cloud.ErrThrottled, status: http.StatusServiceUnavailable, code: "ServiceUnavailable"},
		{name: "server error", id: vm, patch: tags.Patch{Set: tags.Set{"t00": "w"}},
			fault:  &armsim.Fault{Operation: "Tags.UpdateAtScope", Count: 4, Status: http.StatusInternalServerError},
			status: http.StatusInternalServerError, code: "InternalServerError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env.Server.ClearFaults()
			if c.fault != nil {
				env.Server.AddFault(*c.fault)
			}
			// Own gates: a throttled case must not hold the next one's calls.
			p := newTestProvider(t, env, nil, WithThrottleGates(NewThrottleGates()))
			_, err := p.PatchTags(t.Context(), c.id, c.patch)
			if err == nil {
				t.Fatal("no error")
			}
			for _, k := range kinds {
				if got, want := errors.Is(err, k), k == c.kind; got != want {
					t.Errorf("errors.Is(err, %q) = %t, want %t; err = %v", k, got, want, err)
				}
			}
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != c.status {
				t.Errorf("errors.As *azcore.ResponseError: %v, want status %d", re, c.status)
			}
			if msg := err.Error(); !containsAll(msg, c.id, fmt.Sprintf("ARM answered %d %s", c.status, c.code)) || strings.Contains(msg, "\n") {
				t.Errorf("message %q: want one line naming the resource and ARM's answer", msg)
			}
			if d, ok := cloud.RetryAfter(err); ok != (c.kind == cloud.ErrThrottled) || (ok && (d <= 90*time.Second || d > 100*time.Second)) {
				t.Errorf("cloud.RetryAfter = %v, %t", d, ok)
			}
		})
	}
}
