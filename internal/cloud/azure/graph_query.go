package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
)

// graphQuery runs one Discover query through the provider's pipeline
// (throttle gates, budget, metrics) and counts the requests it sends.
type graphQuery struct {
	p       *Provider
	c       *armresourcegraph.Client
	queries []string
	sent    *atomic.Int64
}

// newGraphQuery builds a Resource Graph client on the provider's pipeline
// with a request counter behind the throttle gate (held calls are not
// counted).
func (p *Provider) newGraphQuery(queries ...string) (*graphQuery, error) {
	sent := new(atomic.Int64)
	o := *p.armOpts
	o.PerRetryPolicies = append(slices.Clone(o.PerRetryPolicies), countPolicy{sent})
	c, err := armresourcegraph.NewClient(p.cred, &o)
	if err != nil {
		return nil, fmt.Errorf("azure: Resource Graph client: %w", err)
	}
	return &graphQuery{p: p, c: c, queries: queries, sent: sent}, nil
}

// calls is the number of requests sent so far.
func (g *graphQuery) calls() int { return int(g.sent.Load()) }

// run pages through each query over subs and returns their rows.
func (g *graphQuery) run(ctx context.Context, subs []string) ([]map[string]any, error) {
	var rows []map[string]any
	for _, q := range g.queries {
		r, err := g.runOne(ctx, q, subs)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// runOne pages through one query over subs. A page the Resource Graph
// gate held (its quota spent until a reset, or an earlier 429) is asked
// again after the wait when that is at most Retry.MaxRetryDelay, at most
// graphMaxQuotaWaits times.
func (g *graphQuery) runOne(ctx context.Context, query string, subs []string) ([]map[string]any, error) {
	req := armresourcegraph.QueryRequest{
		Query: to.Ptr(query),
		Options: &armresourcegraph.QueryRequestOptions{
			Top: to.Ptr[int32](graphPageSize), ResultFormat: to.Ptr(armresourcegraph.ResultFormatObjectArray),
		},
	}
	for _, s := range subs {
		req.Subscriptions = append(req.Subscriptions, to.Ptr(s))
	}
	var rows []map[string]any
	waits := 0
	for {
		resp, err := g.c.Resources(ctx, req, nil)
		if err != nil {
			var held *heldError
			if errors.As(err, &held) && held.t.RetryAfter <= g.p.opts.Retry.MaxRetryDelay && waits < graphMaxQuotaWaits {
				waits++
				if err := sleepCtx(ctx, held.t.RetryAfter); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		page, err := pageRows(resp.QueryResponse)
		if err != nil {
			return nil, err
		}
		rows = append(rows, page...)
		if resp.SkipToken == nil || *resp.SkipToken == "" {
			return rows, nil
		}
		if len(page) == 0 {
			return nil, errors.New("azure: Resource Graph answered an empty page with a $skipToken")
		}
		req.Options.SkipToken = resp.SkipToken
	}
}

// pageRows returns a page's rows.
func pageRows(r armresourcegraph.QueryResponse) ([]map[string]any, error) {
	if r.ResultTruncated != nil && *r.ResultTruncated == armresourcegraph.ResultTruncatedTrue {
		return nil, errors.New("azure: Resource Graph truncated the result")
	}
	data, ok := r.Data.([]any)
	if !ok && r.Data != nil {
		return nil, fmt.Errorf("azure: Resource Graph answered data of type %T, not an object array", r.Data)
	}
	out := make([]map[string]any, 0, len(data))
	for _, d := range data {
		if m, ok := d.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// countPolicy is a per-retry pipeline policy that counts the HTTP attempts
// that reach it.
type countPolicy struct{ n *atomic.Int64 }

// Do implements policy.Policy.
func (c countPolicy) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	return req.Next()
}

// Resource Graph's quota headers.
const (
	headerQuotaRemaining   = "x-ms-user-quota-remaining"
	headerQuotaResetsAfter = "x-ms-user-quota-resets-after"
)

// graphQuotaWait is how long a Resource Graph answer says its quota stays
// spent: its x-ms-user-quota-resets-after ("hh:mm:ss") when
// x-ms-user-quota-remaining is 0; 0 otherwise and for other gates.
func graphQuotaWait(k gateKey, resp *http.Response) time.Duration {
	if k.bucket != bucketGraph || resp == nil || strings.TrimSpace(resp.Header.Get(headerQuotaRemaining)) != "0" {
		return 0
	}
	return parseHMS(resp.Header.Get(headerQuotaResetsAfter))
}

// parseHMS parses "hh:mm:ss" (seconds may have a fraction); 0 when
// malformed.
func parseHMS(v string) time.Duration {
	parts := strings.Split(strings.TrimSpace(v), ":")
	if len(parts) != 3 {
		return 0
	}
	h, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(parts[1])
	s, err3 := strconv.ParseFloat(parts[2], 64)
	if err1 != nil || err2 != nil || err3 != nil || h < 0 || m < 0 || s < 0 {
		return 0
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s*float64(time.Second))
}

// isGraphPath reports whether an ARM path is a tenant-level Resource Graph
// request (/providers/Microsoft.ResourceGraph/...).
func isGraphPath(path string) bool {
	segs := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	return len(segs) >= 2 && strings.EqualFold(segs[0], "providers") && strings.EqualFold(segs[1], "Microsoft.ResourceGraph")
}
