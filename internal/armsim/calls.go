package armsim

import (
	"maps"
	"slices"
	"sync"
)

// OpCalls counts the requests of one operation.
type OpCalls struct {
	// Total is the number of requests.
	Total int `json:"total"`
	// ByStatus counts them by HTTP status.
	ByStatus map[int]int `json:"byStatus"`
}

// Calls is a snapshot of request counts by operation name. Operation names
// follow the SDK clients: "VirtualMachines.Get", "VirtualMachines.List",
// "VirtualMachines.ListAll", "VirtualMachines.Update",
// "VirtualMachineScaleSets.{Get,List,ListAll,Update}",
// "VirtualMachineScaleSetVMs.{Get,List,Update}",
// "Tags.{GetAtScope,CreateOrUpdateAtScope,UpdateAtScope,DeleteAtScope}",
// "Resources.{List,ListByResourceGroup,GetByID}",
// "ResourceGroups.{Get,List}", "ResourceGraph.Resources",
// "Permissions.ListForSubscription",
// "Operations.{Status,Result}" (LRO polling), "Identity.*" and "Unknown".
type Calls map[string]OpCalls

// Count returns the number of requests of op (0 if none).
func (c Calls) Count(op string) int { return c[op].Total }

// CountStatus returns the number of requests of op answered with status.
func (c Calls) CountStatus(op string, status int) int { return c[op].ByStatus[status] }

// Ops returns the operation names, sorted.
func (c Calls) Ops() []string {
	out := slices.AppendSeq(make([]string, 0, len(c)), maps.Keys(c))
	slices.Sort(out)
	return out
}

// callCounter counts requests.
type callCounter struct {
	mu sync.Mutex
	m  map[string]*OpCalls
}

func newCallCounter() *callCounter { return &callCounter{m: map[string]*OpCalls{}} }

func (c *callCounter) record(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.m[op]
	if oc == nil {
		oc = &OpCalls{ByStatus: map[int]int{}}
		c.m[op] = oc
	}
	oc.Total++
	oc.ByStatus[status]++
}

func (c *callCounter) snapshot() Calls {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(Calls, len(c.m))
	for k, v := range c.m {
		bs := make(map[int]int, len(v.ByStatus))
		for s, n := range v.ByStatus {
			bs[s] = n
		}
		out[k] = OpCalls{Total: v.Total, ByStatus: bs}
	}
	return out
}

func (c *callCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = map[string]*OpCalls{}
}

// Calls returns a snapshot of per-operation request counts (admin requests
// are not counted).
func (s *Server) Calls() Calls { return s.calls.snapshot() }

// ResetCalls zeroes the request counts.
func (s *Server) ResetCalls() { s.calls.reset() }
