package sqs

import (
	"context"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/tagsync/tagsync/internal/cloud"
)

// tagsync's own tag writes are CloudTrail calls too. They name tagsync,
// which is no other writer: a change of a value that names tagsync's own
// identity must not make it the other side of a fight. The source asks STS
// who it is (sts:GetCallerIdentity, which needs no permission) with the
// credentials it reads the queue with, the AWS provider's, and keeps no
// call of that identity (attribution.record). Until STS has answered, calls
// are kept as before.

// learnSelf asks STS for the source's identity until it answers or ctx
// ends, backing off after a failure.
func (s *Source) learnSelf(ctx context.Context) {
	backoff := s.newBackoff()
	for ctx.Err() == nil {
		out, err := s.stsClient.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err == nil {
			self := sdkaws.ToString(out.Arn)
			s.attr.setSelf(self)
			s.log.Info("tagsync's own calls are known by their identity; CloudTrail events of them name no other writer", "identity", self)
			return
		}
		if ctx.Err() != nil {
			return
		}
		d := backoff.Step()
		s.log.Info("cannot learn tagsync's own AWS identity (sts:GetCallerIdentity); until then its own calls may be named as another writer's",
			"error", err.Error(), "retryIn", d.Round(time.Second).String())
		cloud.Sleep(ctx, d)
	}
}
