package armsim_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

// benchGroups x (200 resources) = 10,000 resources.
const benchGroups = 50

// seedLarge creates 10,000 resources: per group 2 scale sets (50 Uniform
// instances each), 50 VMs and 148 generic resources.
func seedLarge(b *testing.B, s *armsim.Server, sub string) {
	b.Helper()
	owned := map[string]string{"kubernetes.io_cluster.aks": "owned", "env": "prod"}
	for g := 0; g < benchGroups; g++ {
		rg := armsim.ResourceGroup{Name: fmt.Sprintf("rg-%02d", g)}
		for i := 0; i < 2; i++ {
			ss := armsim.ScaleSet{Name: fmt.Sprintf("vmss-%d", i), Tags: owned}
			for n := 0; n < 50; n++ {
				ss.Instances = append(ss.Instances, fmt.Sprint(n))
			}
			rg.ScaleSets = append(rg.ScaleSets, ss)
		}
		for i := 0; i < 50; i++ {
			rg.VirtualMachines = append(rg.VirtualMachines, armsim.VirtualMachine{Name: fmt.Sprintf("vm-%02d", i), Tags: owned})
		}
		for i := 0; i < 148; i++ {
			rg.Resources = append(rg.Resources, armsim.Resource{Type: armsim.TypeDisk, Name: fmt.Sprintf("disk-%03d", i), Tags: owned})
		}
		if _, err := s.CreateResourceGroup(sub, rg); err != nil {
			b.Fatal(err)
		}
	}
	if n := s.ResourceCount(); n != benchGroups*200 {
		b.Fatalf("seeded %d resources", n)
	}
}

func benchEnv(b *testing.B, opts ...armsimtest.Option) *armsimtest.Env {
	opts = append(opts, armsimtest.WithThrottle(armsim.ThrottleOptions{Disabled: true}))
	env := armsimtest.Start(b, opts...)
	seedLarge(b, env.Server, env.SubscriptionID)
	return env
}

// BenchmarkVMGet is one armcompute VirtualMachinesClient.Get per op, over
// HTTPS, against 10,000 resources.
func BenchmarkVMGet(b *testing.B) {
	env := benchEnv(b)
	c := vmClient(b, env)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Get(ctx(b), fmt.Sprintf("rg-%02d", i%benchGroups), fmt.Sprintf("vm-%02d", i%50), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMixedParallel is a controller-like mix through the real SDK
// clients from parallel goroutines over HTTPS: 40% VM GET, 20% scale-set
// GET, 20% Tags GET, 10% Tags Merge (LRO finishing at once), 10% VM list
// page (100 VMs). It reports requests per second.
func BenchmarkMixedParallel(b *testing.B) {
	env := benchEnv(b)
	vms, sets, tags := vmClient(b, env), vmssClient(b, env), tagsClient(b, env)
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1))
			if err := mixedOp(b, env, vms, sets, tags, i); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

func mixedOp(b *testing.B, env *armsimtest.Env, vms *armcompute.VirtualMachinesClient, sets *armcompute.VirtualMachineScaleSetsClient, tags *armresources.TagsClient, i int) error {
	rg := fmt.Sprintf("rg-%02d", i%benchGroups)
	vmID := "/subscriptions/" + env.SubscriptionID + "/resourceGroups/" + rg + "/providers/Microsoft.Compute/virtualMachines/" + fmt.Sprintf("vm-%02d", i%50)
	var err error
	switch i % 10 {
	case 0, 1, 2, 3:
		_, err = vms.Get(ctx(b), rg, fmt.Sprintf("vm-%02d", i%50), nil)
	case 4, 5:
		_, err = sets.Get(ctx(b), rg, fmt.Sprintf("vmss-%d", i%2), nil)
	case 6, 7:
		_, err = tags.GetAtScope(ctx(b), vmID, nil)
	case 8:
		op := armresources.TagsPatchOperationMerge
		var p interface{ Done() bool }
		p, err = tags.BeginUpdateAtScope(ctx(b), vmID, armresources.TagsPatchResource{Operation: &op,
			Properties: &armresources.Tags{Tags: ptrMap(map[string]string{"seen": fmt.Sprint(i % 7)})}}, nil)
		_ = p
	case 9:
		_, err = vms.NewListPager(rg, nil).NextPage(ctx(b))
	}
	return err
}

// BenchmarkGraphQuery is one Resource Graph query over 10,000 resources
// (type and group filter, projection, first page).
func BenchmarkGraphQuery(b *testing.B) {
	env := benchEnv(b, armsimtest.WithPlainHTTP())
	c, err := armresourcegraph.NewClient(env.Credential, env.ClientOptions)
	if err != nil {
		b.Fatal(err)
	}
	q := "resources | where type =~ 'microsoft.compute/virtualmachines' and resourceGroup in~ ('rg-01', 'rg-02') | project id, name, tags"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Resources(ctx(b), armresourcegraph.QueryRequest{Query: &q}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if *resp.TotalRecords != 100 {
			b.Fatalf("records = %d", *resp.TotalRecords)
		}
	}
}

// largeCluster is 10,000 resources of the cluster types in 5 subscriptions.
func largeCluster() armsimtest.ClusterEstate {
	var subs []string
	for i := range 5 {
		subs = append(subs, fmt.Sprintf("00000000-0000-4000-8000-%012d", 100+i))
	}
	return armsimtest.ClusterEstate{Infra: "big", Subscriptions: subs, PerType: 200, Tags: map[string]string{"kubernetes.io_cluster.big": "owned"}}
}

// BenchmarkClusterEstateLoad loads 10,000 resources in 5 subscriptions.
func BenchmarkClusterEstateLoad(b *testing.B) {
	s, err := armsim.New(armsim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	st := largeCluster().State()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Load(st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGraphClusterDiscovery is one discovery over 10,000 resources
// in 5 subscriptions: the union of resources and resource groups with two
// OR-ed classifiers, all 11 pages of up to 1000 rows.
func BenchmarkGraphClusterDiscovery(b *testing.B) {
	env := armsimtest.Start(b, armsimtest.WithPlainHTTP(), armsimtest.WithThrottle(armsim.ThrottleOptions{Disabled: true}))
	est := largeCluster()
	if err := est.Seed(env.Server); err != nil {
		b.Fatal(err)
	}
	c, err := armresourcegraph.NewClient(env.Credential, env.ClientOptions)
	if err != nil {
		b.Fatal(err)
	}
	q := `resources | union resourcecontainers | where type != 'microsoft.resources/subscriptions' and (tags['kubernetes.io_cluster.big'] == 'owned' or tags['other'] == 'x') | project id, name, type, subscriptionId, resourceGroup, tags`
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rows, pages := graphAll(b, c, est.Subscriptions, q, 1000); len(rows) != 10_005 || pages != 11 {
			b.Fatalf("%d rows in %d pages", len(rows), pages)
		}
	}
}
