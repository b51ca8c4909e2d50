package aws

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tagsync/tagsync/internal/cloud"
)

// providerName is the provider label of the metrics and Provider.Name.
const providerName = "aws"

// servicePrefixes map SDK service IDs to the prefixes of IAM actions where
// the ID lower-cased without spaces is not the prefix ("Auto Scaling" is
// "autoscaling").
var servicePrefixes = map[string]string{
	"EC2":                         "ec2",
	"Resource Groups Tagging API": "tag",
	"Elastic Load Balancing v2":   "elasticloadbalancing",
}

// operationName names an SDK operation as its IAM action does:
// "ec2:CreateTags", "tag:GetResources".
func operationName(ctx context.Context) string {
	svc := awsmiddleware.GetServiceID(ctx)
	prefix, ok := servicePrefixes[svc]
	if !ok {
		prefix = strings.ToLower(strings.ReplaceAll(svc, " ", ""))
	}
	return prefix + ":" + awsmiddleware.GetOperationName(ctx)
}

// callCounter counts the requests sent under a context (Discovery.Calls).
type callCounter struct{}

// withCallCounter returns ctx counting its requests into n.
func withCallCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, callCounter{}, n)
}

// metricsMiddleware is the first Deserialize-step middleware: it runs once
// per HTTP attempt (the SDK's retry loop is in the Finalize step, around
// it), sees the raw answer and the deserialized error, and counts the
// attempt.
type metricsMiddleware struct{ m *cloud.RequestMetrics }

// ID names the middleware in the stack.
func (metricsMiddleware) ID() string { return "TagsyncRequestMetrics" }

// HandleDeserialize sends the request and records it.
func (mw metricsMiddleware) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	start := time.Now()
	out, md, err := next.HandleDeserialize(ctx, in)
	status := 0
	if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp != nil {
		status = resp.StatusCode
	} else if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		status = resp.StatusCode
	}
	mw.m.Observe(operationName(ctx), status, isThrottle(err), time.Since(start))
	if n, ok := ctx.Value(callCounter{}).(*atomic.Int64); ok {
		n.Add(1)
	}
	return out, md, err
}
