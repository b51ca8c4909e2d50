package testenv

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// instanceSet knows which EC2 instances moto has, to answer as EC2 does for
// the others: moto tags (CreateTags) and untags (DeleteTags) any instance
// ID, where EC2 answers InvalidInstanceID.NotFound ("The specified instance
// does not exist", EC2 API reference, Error codes), and EC2's
// DescribeInstances with an InstanceId.N that does not exist fails the
// whole call, naming the IDs. A filter on instance-id naming an unknown ID
// is no error: it matches nothing (moto agrees).
//
// The set is read from moto (Direct) and kept until a call through the
// rules may have started or ended instances (any EC2 or Auto Scaling call
// but reads and tag writes, and moto's own API such as reset). Terminated
// instances count as known: EC2 still describes them for a while.
type instanceSet struct {
	gen atomic.Uint64 // bumped around each call that may change the set

	mu   sync.Mutex
	sets map[string]knownInstances // by awsCaller.key
}

// knownInstances is one account's instances in one region, as read when
// the generation was at.
type knownInstances struct {
	at  uint64
	ids map[string]bool
}

// changes reports whether a call may start or end instances.
func changesInstances(service, action string) bool {
	switch service {
	case "ec2", "autoscaling":
		if isReadAction(action) {
			return false
		}
		switch action {
		case "CreateTags", "DeleteTags", "CreateOrUpdateTags":
			return false
		}
		return true
	case "":
		return true // moto's own API (reset) and anything unsigned
	}
	return false
}

// known returns the IDs of the instances moto has.
func (s *instanceSet) known(ctx context.Context, direct string, caller awsCaller) (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.gen.Load()
	if k, ok := s.sets[caller.key()]; ok && k.at == gen {
		return k.ids, nil
	}
	ids := map[string]bool{}
	p := ec2.NewDescribeInstancesPaginator(ec2.NewFromConfig(caller.config(direct)), &ec2.DescribeInstancesInput{MaxResults: aws.Int32(1000)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing moto's instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				ids[aws.ToString(i.InstanceId)] = true
			}
		}
	}
	if s.sets == nil {
		s.sets = map[string]knownInstances{}
	}
	s.sets[caller.key()] = knownInstances{at: gen, ids: ids}
	return ids, nil
}

// instanceRefusal returns EC2's error for an EC2 call naming instances
// moto does not have, or "" when there is none.
func (a *AWSRules) instanceRefusal(ctx context.Context, caller awsCaller, action string, form url.Values) (code, msg string, err error) {
	var param string
	switch action {
	case "CreateTags", "DeleteTags":
		param = "ResourceId."
	case "DescribeInstances":
		param = "InstanceId."
	default:
		return "", "", nil
	}
	var named []string
	for key, vs := range form {
		if strings.HasPrefix(key, param) && len(vs) > 0 && strings.HasPrefix(vs[0], "i-") {
			named = append(named, vs[0])
		}
	}
	if len(named) == 0 {
		return "", "", nil
	}
	known, err := a.instances.known(ctx, a.direct, caller)
	if err != nil {
		return "", "", err
	}
	var missing []string
	for _, id := range named {
		if !known[id] {
			missing = append(missing, id)
		}
	}
	switch sort.Strings(missing); len(missing) {
	case 0:
		return "", "", nil
	case 1:
		return "InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", missing[0]), nil
	default:
		return "InvalidInstanceID.NotFound", fmt.Sprintf("The instance IDs '%s' do not exist", strings.Join(missing, ", ")), nil
	}
}
