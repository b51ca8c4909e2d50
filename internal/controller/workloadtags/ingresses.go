package workloadtags

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// The AWS Load Balancer Controller's names (kubernetes-sigs/
// aws-load-balancer-controller: pkg/ingress/class.go, pkg/annotations).
const (
	// albController is the IngressClass controller of its ALBs.
	albController = "ingress.k8s.aws/alb"
	// albClassAnnotation is the legacy class annotation and its value.
	albClassAnnotation, albClass = "kubernetes.io/ingress.class", "alb"
	// albGroupAnnotation names an explicit IngressGroup: one ALB for
	// all its Ingresses.
	albGroupAnnotation = "alb.ingress.kubernetes.io/group.name"
	// defaultClassAnnotation marks the cluster's default IngressClass.
	defaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
)

// ingressWorkloads are the Application Load Balancers of the Ingresses of
// the AWS Load Balancer Controller in the selected namespaces, found by
// the cloud (cloud.IngressFinder) in one search by stack: an Ingress alone
// in its stack owns its ALB; Ingresses of one IngressGroup share theirs,
// which is reported, never tagged for one workload; an Ingress whose ALB
// is not made yet is pending.
func (p *pass) ingressWorkloads(ctx context.Context, nss map[string]*corev1.Namespace) ([]workload, cloud.ServiceResources, error) {
	if p.ingresses == nil {
		return nil, cloud.ServiceResources{}, nil
	}
	albClasses, err := p.albClasses(ctx)
	if err != nil {
		return nil, cloud.ServiceResources{}, err
	}
	var list networkingv1.IngressList
	if err := p.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, cloud.ServiceResources{}, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	members := map[string]int{} // Ingresses per stack, in every namespace
	type selected struct {
		stack string
		w     tags.Workload
	}
	var sel []selected
	for i := range list.Items {
		ing := &list.Items[i]
		if ing.DeletionTimestamp != nil || !isALB(ing, albClasses) {
			continue
		}
		stack := ing.Namespace + "/" + ing.Name
		if g := ing.Annotations[albGroupAnnotation]; g != "" {
			stack = g
		}
		members[stack]++
		ns := nss[ing.Namespace]
		if ns == nil {
			continue
		}
		w := tags.Workload{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name, Labels: ing.Labels, Annotations: ing.Annotations,
			NamespaceLabels: ns.Labels, NamespaceAnnotations: ns.Annotations}
		if p.cfg.selects(w) {
			sel = append(sel, selected{stack, w})
		}
	}
	var stacks []string
	for _, s := range sel {
		stacks = append(stacks, s.stack)
	}
	if len(stacks) == 0 {
		return nil, cloud.ServiceResources{}, nil
	}
	found, err := p.ingresses.IngressResources(ctx, stacks)
	if err != nil {
		return nil, found, err
	}
	var out []workload
	for _, s := range sel {
		source := "Ingress " + s.w.Namespace + "/" + s.w.Name
		lbs := found.Own[s.stack]
		switch {
		case members[s.stack] > 1:
			for _, c := range lbs {
				out = append(out, workload{source: source, ref: ref{shared: "the ALB of IngressGroup " + s.stack + ": " + c.ID}, w: s.w})
			}
		case len(lbs) > 0:
			for _, c := range lbs {
				out = append(out, workload{source: source, ref: ref{id: c.ID}, w: s.w})
			}
		case len(found.Failed) == 0:
			out = append(out, workload{source: source, ref: ref{notYet: true}, w: s.w})
		}
	}
	// Only what one Ingress owns is read as its own; a group's ALB is not.
	for stack := range found.Own {
		if members[stack] > 1 {
			delete(found.Own, stack)
		}
	}
	return out, found, nil
}

// albClasses are the names of the IngressClasses of the AWS Load Balancer
// Controller, and "" when one of them is the cluster's default.
func (p *pass) albClasses(ctx context.Context) (map[string]bool, error) {
	var list networkingv1.IngressClassList
	if err := p.reader.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range list.Items {
		if c.Spec.Controller == albController {
			out[c.Name] = true
			if c.Annotations[defaultClassAnnotation] == "true" {
				out[""] = true
			}
		}
	}
	return out, nil
}

// isALB reports whether the AWS Load Balancer Controller serves ing: its
// class (spec.ingressClassName, else the legacy annotation, else the
// default class) is one of albClasses.
func isALB(ing *networkingv1.Ingress, albClasses map[string]bool) bool {
	switch {
	case ing.Spec.IngressClassName != nil:
		return albClasses[*ing.Spec.IngressClassName]
	case ing.Annotations[albClassAnnotation] != "":
		return ing.Annotations[albClassAnnotation] == albClass
	}
	return albClasses[""]
}
